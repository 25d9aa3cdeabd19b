/// One minutia: where a ridge ends or forks. Coordinates are in pixels of the print rescaled to
/// 500 ppi (top-left origin, y down), so prints from 569-ppi sensors and 500-ppi camera prints
/// share one scale and the matcher's distances mean the same millimetres everywhere.
public struct Minutia: Sendable, Hashable {
    /// Ridge ending or bifurcation. Raw values are the protocol's names.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case ending, bifurcation
    }

    /// Pixels at 500 ppi.
    public var x: Double
    public var y: Double
    /// Radians in [0, 2π), counter-clockwise on screen from the +x axis (ISO/IEC 19794-2's sense).
    /// Endings point away from their ridge; bifurcations point towards their stem (the two are
    /// each other's ridge/valley duals, so a minutia that changes kind keeps its direction).
    public var angle: Double
    public var kind: Kind
    /// 0–100: local ridge clarity and distance from the print's edge.
    public var quality: Int

    public init(x: Double, y: Double, angle: Double, kind: Kind, quality: Int) {
        self.x = x
        self.y = y
        let twoPi = 2 * Double.pi
        let a = angle.truncatingRemainder(dividingBy: twoPi)
        self.angle = a < 0 ? a + twoPi : a
        self.kind = kind
        self.quality = max(0, min(100, quality))
    }

    /// The angle in degrees, [0, 360).
    public var angleDegrees: Double { angle * 180 / .pi }
}
