import Synchronization

/// An 8-bit pixel plane owned by a pool. When the last frame that uses it goes away, its memory
/// returns to the pool, so a running camera does not allocate per frame.
public final class PixelBuffer: @unchecked Sendable {
    // Written once by the producer before the frame is published, read-only afterwards.
    public let pointer: UnsafeMutablePointer<UInt8>
    public let count: Int
    private let pool: PixelBufferPool?

    init(count: Int, pool: PixelBufferPool?) {
        self.pointer = .allocate(capacity: max(count, 1))
        self.count = count
        self.pool = pool
    }

    init(recycled pointer: UnsafeMutablePointer<UInt8>, count: Int, pool: PixelBufferPool) {
        self.pointer = pointer
        self.count = count
        self.pool = pool
    }

    public var bytes: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: pointer, count: count) }

    deinit {
        if let pool, pool.recycle(pointer, count: count) { return }
        pointer.deallocate()
    }
}

/// Recycles pixel planes of equal size. Bounded: at most `limit` idle planes are kept.
public final class PixelBufferPool: Sendable {
    private struct Idle {
        var count = 0
        var addresses: [UInt] = []  // idle planes, as addresses (pointers are not Sendable)
    }
    private let idle = Mutex(Idle())
    private let limit: Int

    public init(limit: Int = 8) { self.limit = limit }

    deinit {
        idle.withLock { state in state.addresses.forEach { Self.pointer($0).deallocate() } }
    }

    /// A plane of `count` bytes (contents undefined).
    public func buffer(count: Int) -> PixelBuffer {
        let reused: UInt? = idle.withLock { state in
            if state.count != count {
                state.addresses.forEach { Self.pointer($0).deallocate() }
                state.addresses.removeAll()
                state.count = count
                return nil
            }
            return state.addresses.popLast()
        }
        if let reused { return PixelBuffer(recycled: Self.pointer(reused), count: count, pool: self) }
        return PixelBuffer(count: count, pool: self)
    }

    /// Takes a plane back; false when the pool is full or the size changed (caller frees it).
    fileprivate func recycle(_ pointer: UnsafeMutablePointer<UInt8>, count: Int) -> Bool {
        let address = UInt(bitPattern: pointer)
        return idle.withLock { state in
            guard state.count == count, state.addresses.count < limit else { return false }
            state.addresses.append(address)
            return true
        }
    }

    private static func pointer(_ address: UInt) -> UnsafeMutablePointer<UInt8> {
        UnsafeMutablePointer(bitPattern: address)!
    }

    /// Idle planes held (for tests and benchmarks).
    public var idleCount: Int { idle.withLock { $0.addresses.count } }
}
