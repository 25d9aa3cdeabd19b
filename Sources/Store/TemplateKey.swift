import Crypto
import Foundation
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// The AES-256 key that seals every template. It comes from systemd's credential
/// (`$CREDENTIALS_DIRECTORY/biometricd.key`) when present, else from `<state>/key`, which is
/// created with mode 0600 only while the database holds nothing sealed: a missing key next to
/// sealed rows is refused (`keyMissing`), never silently replaced. Raw 32 bytes or 64 hex
/// characters are accepted.
public enum TemplateKey {
    public static let credentialName = "biometricd.key"
    public static let fileName = "key"

    /// Where the key in force came from (daemon.status `store.key`).
    public enum Source: String, Sendable, Codable {
        /// A systemd credential (LoadCredential= / LoadCredentialEncrypted=).
        case credential
        /// `<state>/key`, a 0600 file.
        case file
    }

    public static func load(stateDirectory: String, credentialsDirectory: String?) throws(StoreError) -> SymmetricKey {
        try loadWithSource(stateDirectory: stateDirectory, credentialsDirectory: credentialsDirectory).key
    }

    public static func loadWithSource(stateDirectory: String, credentialsDirectory: String?) throws(StoreError)
        -> (key: SymmetricKey, source: Source)
    {
        if let dir = credentialsDirectory, !dir.isEmpty {
            let path = dir + "/" + credentialName
            if FileManager.default.fileExists(atPath: path) { return (try read(path), .credential) }
        }
        try TemplateStore.prepareDirectory(stateDirectory)
        let path = stateDirectory + "/" + fileName
        if FileManager.default.fileExists(atPath: path) { return (try read(path), .file) }
        let sealed = try TemplateStore.holdsSealedData(directory: stateDirectory)
        guard sealed == 0 else { throw .keyMissing(path, sealedRows: sealed) }
        return (try create(path), .file)
    }

    static func read(_ path: String) throws(StoreError) -> SymmetricKey {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .badKey("\(path) cannot be read")
        }
        var st = stat()
        if stat(path, &st) == 0, st.st_mode & 0o077 != 0 {
            throw .badKey("\(path) is readable by others (mode \(String(st.st_mode & 0o777, radix: 8))); chmod 600 it")
        }
        if data.count == 32 { return SymmetricKey(data: data) }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.count == 64, let bytes = hexBytes(text) { return SymmetricKey(data: bytes) }
        throw .badKey("\(path) must hold 32 raw bytes or 64 hex characters")
    }

    /// Writes a fresh random key atomically (temp file, fsync, rename), mode 0600.
    static func create(_ path: String) throws(StoreError) -> SymmetricKey {
        let key = SymmetricKey(size: .bits256)
        let tmp = path + ".tmp"
        unlink(tmp)
        do {
            let fd = try FileDescriptor.open(FilePath(tmp), .writeOnly, options: [.create, .exclusiveCreate, .closeOnExec],
                                             permissions: .ownerReadWrite)
            try fd.closeAfter {
                _ = try key.withUnsafeBytes { try fd.writeAll($0) }
                guard fsync(fd.rawValue) == 0 else { throw Errno(rawValue: errno) }
            }
            guard rename(tmp, path) == 0 else { throw Errno(rawValue: errno) }
        } catch {
            unlink(tmp)
            throw .system("cannot write the template key \(path)", error as? Errno ?? .ioError)
        }
        syncDirectory(of: path)
        return key
    }

    private static func hexBytes(_ text: String) -> Data? {
        var data = Data(capacity: text.count / 2)
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            guard let byte = UInt8(text[index..<next], radix: 16) else { return nil }
            data.append(byte)
            index = next
        }
        return data
    }
}

/// fsyncs the folder holding `path`, so a rename in it survives a power cut.
func syncDirectory(of path: String) {
    let dir = (path as NSString).deletingLastPathComponent
    guard let fd = try? FileDescriptor.open(FilePath(dir.isEmpty ? "." : dir), .readOnly, options: [.directory, .closeOnExec])
    else { return }
    fsync(fd.rawValue)
    try? fd.close()
}
