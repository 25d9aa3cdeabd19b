import CSQLite
import Foundation

/// A minimal SQLite connection: prepared statements, typed binds, transactions. Not thread-safe;
/// the store keeps it behind a lock.
final class SQLiteConnection {
    private var db: OpaquePointer?

    init(path: String) throws(StoreError) {
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "error \(rc)"
            sqlite3_close(db)
            db = nil
            throw .io("cannot open database \(path): \(message)")
        }
        sqlite3_busy_timeout(db, 5000)
    }

    deinit { close() }

    func close() {
        if let db { sqlite3_close_v2(db) }
        db = nil
    }

    private var lastMessage: String { db.map { String(cString: sqlite3_errmsg($0)) } ?? "closed" }

    func execute(_ sql: String) throws(StoreError) {
        var error: UnsafeMutablePointer<CChar>?
        guard sqlite3_exec(db, sql, nil, nil, &error) == SQLITE_OK else {
            let message = error.map { String(cString: $0) } ?? lastMessage
            sqlite3_free(error)
            throw .io("SQL failed: \(message)")
        }
    }

    enum Value {
        case text(String)
        case int(Int64)
        case double(Double)
        case blob(Data)
        case null
    }

    /// Runs one statement with binds; calls `row` for every result row.
    func query(_ sql: String, _ binds: [Value] = [], row: (Row) throws(StoreError) -> Void = { _ in }) throws(StoreError) {
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &stmt, nil) == SQLITE_OK else { throw .io("SQL prepare failed: \(lastMessage)") }
        defer { sqlite3_finalize(stmt) }
        for (i, value) in binds.enumerated() {
            let index = Int32(i + 1)
            let rc: Int32
            switch value {
            case .text(let s): rc = sqlite3_bind_text(stmt, index, s, -1, csqlite_transient())
            case .int(let v): rc = sqlite3_bind_int64(stmt, index, v)
            case .double(let v): rc = sqlite3_bind_double(stmt, index, v)
            case .null: rc = sqlite3_bind_null(stmt, index)
            case .blob(let d):
                rc = d.withUnsafeBytes { sqlite3_bind_blob(stmt, index, $0.baseAddress, Int32($0.count), csqlite_transient()) }
            }
            guard rc == SQLITE_OK else { throw .io("SQL bind failed: \(lastMessage)") }
        }
        while true {
            let rc = sqlite3_step(stmt)
            if rc == SQLITE_DONE { return }
            guard rc == SQLITE_ROW else {
                if rc == SQLITE_CONSTRAINT { throw .conflict(lastMessage) }
                throw .io("SQL step failed: \(lastMessage)")
            }
            try row(Row(stmt: stmt!))
        }
    }

    var changes: Int { Int(sqlite3_changes(db)) }

    /// Runs `body` in one transaction: all of it is on disk, or none of it.
    func transaction<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    struct Row {
        let stmt: OpaquePointer
        func text(_ i: Int32) -> String? {
            sqlite3_column_text(stmt, i).map { String(cString: $0) }
        }
        func int(_ i: Int32) -> Int64 { sqlite3_column_int64(stmt, i) }
        func double(_ i: Int32) -> Double { sqlite3_column_double(stmt, i) }
        func blob(_ i: Int32) -> Data {
            let n = Int(sqlite3_column_bytes(stmt, i))
            guard n > 0, let p = sqlite3_column_blob(stmt, i) else { return Data() }
            return Data(bytes: p, count: n)
        }
    }
}
