// Test support: writes templates to a store as fast as it can and prints the id of each one
// after its transaction commits. The crash-consistency test kills it with SIGKILL mid-write and
// checks that every printed id survived intact and the database is consistent.
import BiometricStore
import Foundation

let arguments = CommandLine.arguments
guard arguments.count == 3, let count = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: store-crash-writer STATE_DIR COUNT\n".utf8))
    exit(2)
}
// print() goes through a buffered stdout: flush after each line so a SIGKILL loses nothing printed.
func emit(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
do {
    let key = try TemplateKey.load(stateDirectory: arguments[1], credentialsDirectory: nil)
    let store = try Store(directory: arguments[1], key: key)
    for i in 0..<count {
        // A recognisable plaintext, so the test can also prove it never reaches the file.
        let payload = Data("PLAINTEXT-MARKER-\(i)-".utf8) + Data(repeating: UInt8(i & 0xFF), count: 512)
        let info = try store.templates.add(user: "crash-user-\(i % 7)", modality: .face, quality: 50, payload: payload)
        emit("committed \(info.id) \(i)")
        if i % 50 == 49 { _ = try store.templates.remove(user: "crash-user-\(i % 7)", modality: .finger, id: nil) }
    }
} catch {
    FileHandle.standardError.write(Data("store-crash-writer: \(error)\n".utf8))
    exit(1)
}
