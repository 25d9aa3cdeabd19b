extension FingerprintImage {
    /// The print as a WSQ file at `bitRate` (0.75 bpp, the usual setting), its ppi in the NISTCOM
    /// comment. Fails only for prints above `WSQ.maxPixels`.
    public func wsqEncoded(bitRate: Double = WSQ.defaultBitRate) throws(WSQ.Error) -> [UInt8] {
        try WSQ.encode(pixels: pixels, width: width, height: height, ppi: ppi, bitRate: bitRate)
    }

    /// A print from WSQ bytes at `ppi` (the caller's resolution: the file's NISTCOM PPI is
    /// informative and often absent, and `dpi` is the one per-image input the SPEC gives).
    public init(wsq bytes: [UInt8], ppi: Int) throws(FingerprintError) {
        let image: WSQ.Image
        do { image = try WSQ.decode(bytes) } catch { throw .wsq(error) }
        do {
            try self.init(width: image.width, height: image.height, pixels: image.pixels, ppi: ppi)
        } catch {
            throw .invalidImage(error)
        }
    }
}
