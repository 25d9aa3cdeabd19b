import BiometricProtocol
import NIOCore

/// Splits the byte stream into lines ("\n", an optional "\r" before it is dropped). A line longer
/// than the protocol's limit is an error: the connection answers -32600 and closes.
struct LineDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    struct LineTooLong: Error {}

    let maxLineBytes: Int
    /// Books the bytes waiting in the buffer against the uid's share (nil: unmetered, tests).
    let meter: InputMeter?
    /// How far the current buffer was already searched for "\n".
    private var scanned = 0

    init(maxLineBytes: Int = RPCCodec.maxLineBytes, meter: InputMeter? = nil) {
        self.maxLineBytes = maxLineBytes
        self.meter = meter
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        try meter?.update(buffer.readableBytes)
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

/// One connection's unparsed input, booked against its uid's share of buffered bytes. Used on
/// the channel's event loop only. Until the peer is known (SO_PEERCRED is read right after
/// accept) the bytes are counted and booked when `attach` is called.
final class InputMeter {
    struct OverShare: Error {
        let admission: Admission
    }

    private(set) var held = 0
    private var charge: ((Int) -> Admission)?

    /// Starts booking through `charge` (the uid's share); books what is held already. The
    /// refusal, if that alone is over the share.
    func attach(_ charge: @escaping (Int) -> Admission) -> Admission? {
        self.charge = charge
        guard held > 0 else { return nil }
        let admission = charge(held)
        if admission != .admitted {
            held = 0
            return admission
        }
        return nil
    }

    /// The buffer now holds `bytes`; throws `OverShare` when the growth is refused.
    func update(_ bytes: Int) throws {
        let delta = bytes - held
        guard delta != 0 else { return }
        if let charge {
            let admission = charge(delta)
            guard admission == .admitted else { throw OverShare(admission: admission) }
        }
        held = bytes
    }

    /// The connection closed: gives back what it held.
    func release() {
        if held > 0, let charge { _ = charge(-held) }
        held = 0
        charge = nil
    }
}
