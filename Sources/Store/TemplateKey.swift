import Crypto
import Foundation
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// The AES-256 key that seals every template, and where it came from.
///
/// Installed as a package, the key never lies on disk in the clear: `biometricd-key.service`
/// (root, `/usr/lib/biometricd/biometricd-key`) keeps it sealed with `systemd-creds` — by the TPM
/// 2.0 and the host key when the machine has a TPM, by the host key otherwise — in
/// `<state>/key.cred`, and the unit hands it to the daemon with `LoadCredentialEncrypted=`, so it
/// arrives decrypted in `$CREDENTIALS_DIRECTORY/biometricd.key` (a ramfs). That payload says how
/// it was sealed (``Payload``); when the sealed key could not be unsealed (another TPM, a cleared
/// one) the helper passes a payload that says so, and the daemon refuses to open the store
/// rather than make a new key.
///
/// Without systemd credentials (the unprivileged development mode) the key is `<state>/key`,
/// a 0600 file created only while the database holds nothing sealed: a missing key next to
/// sealed rows is refused (`keyMissing`), never silently replaced. A plain credential or file
/// holds 32 raw bytes or 64 hex characters.
public enum TemplateKey {
    public static let credentialName = "biometricd.key"
    public static let fileName = "key"
    /// The sealed credential `biometricd-key` keeps in the state folder (root, 0600).
    public static let sealedFileName = "key.cred"

    /// Where the key in force came from (daemon.status `store.key`).
    public enum Source: String, Sendable, Codable {
        /// A systemd credential (LoadCredential= / LoadCredentialEncrypted=).
        case credential
        /// `<state>/key`, a 0600 file.
        case file
    }

    /// What protects the key at rest (daemon.status `store.protection`).
    public enum Protection: String, Sendable, Codable {
        /// Sealed by systemd-creds with the TPM 2.0 and the host key: it opens only on this
        /// machine's TPM.
        case tpm2
        /// Sealed by systemd-creds with the host key (/var/lib/systemd/credential.secret): no TPM.
        case host
        /// A plain systemd credential (LoadCredential=), sealed by whoever provided it.
        case credential
        /// The 0600 key file in the state folder.
        case file
    }

    /// The key in force.
    public struct Loaded {
        public var key: SymmetricKey
        public var source: Source
        public var protection: Protection
    }

    /// What `biometricd-key` seals: a versioned text, so the daemon learns how the key was
    /// sealed from the sealed bytes themselves (nobody can change the claim without the TPM or
    /// host key), or that it could not be unsealed.
    ///
    ///     biometricd-template-key v1
    ///     protection tpm2|host
    ///     key <64 hex>
    ///
    /// or, when unsealing failed:
    ///
    ///     biometricd-template-key v1
    ///     unsealable <one line: why>
    public enum Payload: Equatable, Sendable {
        case key(Data, Protection)
        case unsealable(String)

        static let header = "biometricd-template-key v1"

        /// Parses a credential's bytes: the v1 text above, or a bare key (32 raw bytes or 64 hex
        /// characters, protection `credential`). nil when it is neither.
        public static func parse(_ data: Data) -> Payload? {
            if data.count == 32, !data.starts(with: Data(header.utf8)) { return .key(data, .credential) }
            let text = String(decoding: data, as: UTF8.self)
            let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            guard lines.first == header else {
                let bare = text.trimmingCharacters(in: .whitespacesAndNewlines)
                guard bare.count == 64, let bytes = TemplateKey.hexBytes(bare) else { return nil }
                return .key(bytes, .credential)
            }
            var protection: Protection?
            var key: Data?
            for line in lines.dropFirst() {
                let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
                guard parts.count == 2 else { return nil }
                switch parts[0] {
                case "unsealable": return .unsealable(parts[1])
                case "protection":
                    // Only what systemd-creds can do; a sealed payload never says "file".
                    switch parts[1] {
                    case "tpm2": protection = .tpm2
                    case "host": protection = .host
                    default: return nil
                    }
                case "key":
                    guard parts[1].count == 64, let bytes = TemplateKey.hexBytes(parts[1]) else { return nil }
                    key = bytes
                default: return nil
                }
            }
            guard let key, let protection else { return nil }
            return .key(key, protection)
        }
    }

    public static func load(stateDirectory: String, credentialsDirectory: String?) throws(StoreError) -> SymmetricKey {
        try loadWithSource(stateDirectory: stateDirectory, credentialsDirectory: credentialsDirectory).key
    }

    /// The key and where it came from. Throws `keyUnsealable` when the sealed key exists but was
    /// not (or could not be) unsealed: the daemon then serves only daemon.status.
    public static func loadWithSource(stateDirectory: String, credentialsDirectory: String?) throws(StoreError) -> Loaded {
        if let dir = credentialsDirectory, !dir.isEmpty {
            let path = dir + "/" + credentialName
            if FileManager.default.fileExists(atPath: path) {
                switch Payload.parse(try readChecked(path)) {
                case .key(let bytes, let protection)?:
                    return Loaded(key: SymmetricKey(data: bytes), source: .credential, protection: protection)
                case .unsealable(let why)?:
                    throw .keyUnsealable(why)
                case nil:
                    throw .badKey("\(path) must hold 32 raw bytes, 64 hex characters or a biometricd-key payload")
                }
            }
        }
        try Store.prepareDirectory(stateDirectory)
        // A sealed key beside the database, but no credential: the daemon was not started by its
        // unit (which unseals it). Making a plain key here would shadow the sealed one.
        let sealed = stateDirectory + "/" + sealedFileName
        if FileManager.default.fileExists(atPath: sealed) {
            throw .keyUnsealable("\(sealed) holds the sealed template key, but no credential was passed in; start biometricd through systemd (systemctl start biometricd), which unseals it")
        }
        let path = stateDirectory + "/" + fileName
        if FileManager.default.fileExists(atPath: path) { return Loaded(key: try read(path), source: .file, protection: .file) }
        let sealedRows = try Store.holdsSealedData(directory: stateDirectory)
        guard sealedRows == 0 else { throw .keyMissing(path, sealedRows: sealedRows) }
        return Loaded(key: try create(path), source: .file, protection: .file)
    }

    /// The bytes of a key file or credential, refused when others may read it.
    static func readChecked(_ path: String) throws(StoreError) -> Data {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .badKey("\(path) cannot be read")
        }
        var st = stat()
        if stat(path, &st) == 0, st.st_mode & 0o077 != 0 {
            throw .badKey("\(path) is readable by others (mode \(String(st.st_mode & 0o777, radix: 8))); chmod 600 it")
        }
        return data
    }

    static func read(_ path: String) throws(StoreError) -> SymmetricKey {
        let data = try readChecked(path)
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
