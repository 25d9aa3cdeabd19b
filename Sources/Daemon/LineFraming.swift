import BiometricProtocol
import NIOCore

/// Splits the byte stream into lines ("\n", an optional "\r" before it is dropped). A line longer
/// than the protocol's limit is an error: the connection answers -32600 and closes.
struct LineDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    struct LineTooLong: Error {}

    let maxLineBytes: Int
    /// How far the current buffer was already searched for "\n".
    private var scanned = 0

    init(maxLineBytes: Int = RPCCodec.maxLineBytes) {
        self.maxLineBytes = maxLineBytes
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        let view = buffer.readableBytesView
        if let newline = view[(view.startIndex + scanned)...].firstIndex(of: UInt8(ascii: "\n")) {
            let length = newline - view.startIndex
            scanned = 0
            guard length <= maxLineBytes else { throw LineTooLong() }
            var line = buffer.readSlice(length: length)!
            buffer.moveReaderIndex(forwardBy: 1)
            if line.readableBytesView.last == UInt8(ascii: "\r") { line = line.getSlice(at: line.readerIndex, length: length - 1)! }
            context.fireChannelRead(wrapInboundOut(line))
            return .continue
        }
        scanned = view.count
        if view.count > maxLineBytes { throw LineTooLong() }
        return .needMoreData
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        // A last line without "\n" still counts (e.g. `printf '{...}' | nc -U`).
        while try decode(context: context, buffer: &buffer) == .continue {}
        if buffer.readableBytes > 0 {
            let line = buffer.readSlice(length: buffer.readableBytes)!
            scanned = 0
            context.fireChannelRead(wrapInboundOut(line))
        }
        return .needMoreData
    }
}
