/// Facts about a face in one frame, computed by the native pipeline.
public struct FaceBox: Sendable, Equatable, Codable {
    public var x: Double
    public var y: Double
    public var width: Double
    public var height: Double

    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    public var centerX: Double { x + width / 2 }
    public var centerY: Double { y + height / 2 }
}

public struct HeadPose: Sendable, Equatable {
    /// Degrees; + = the person turns to their left.
    public var yaw: Double
    /// Degrees; + = looks up.
    public var pitch: Double
    /// Degrees; + = tilts clockwise in the image.
    public var roll: Double

    public static let frontal = HeadPose(yaw: 0, pitch: 0, roll: 0)
}

/// The 68 iBUG landmarks as (x, y) pairs.
public struct Landmarks: Sendable, Equatable {
    public var points: [SIMD2<Double>]

    public init(points: [SIMD2<Double>]) {
        precondition(points.count == 68)
        self.points = points
    }

    public init(flat: [Float]) {
        precondition(flat.count == 136)
        points = (0..<68).map { SIMD2(Double(flat[2 * $0]), Double(flat[2 * $0 + 1])) }
    }

    public var flat: [Float] { points.flatMap { [Float($0.x), Float($0.y)] } }

    /// Distance between the outer eye corners (36, 45): the face's scale.
    public var interocular: Double { distance(points[36], points[45]) }

    /// Eye aspect ratio (Soukupová & Čech 2016), mean of both eyes: ~0.3 open, <0.2 closed.
    public var eyeAspectRatio: Double {
        func ear(_ p: [Int]) -> Double {
            let vertical = distance(points[p[1]], points[p[5]]) + distance(points[p[2]], points[p[4]])
            let horizontal = 2 * distance(points[p[0]], points[p[3]])
            return horizontal > 0 ? vertical / horizontal : 0
        }
        return (ear([36, 37, 38, 39, 40, 41]) + ear([42, 43, 44, 45, 46, 47])) / 2
    }
}

func distance(_ a: SIMD2<Double>, _ b: SIMD2<Double>) -> Double {
    let d = a - b
    return (d.x * d.x + d.y * d.y).squareRoot()
}
