/// Results of the foundation methods, shared by the daemon (encoding) and clients (decoding).

public struct ModelStatus: Codable, Sendable, Equatable {
    /// Model files present with the expected checksum.
    public var loaded: [String]
    /// Required files absent from every models folder.
    public var missing: [String]
    /// Files present but with a wrong checksum (refused).
    public var corrupt: [String]
    /// Folders searched, in order.
    public var folders: [String]

    public init(loaded: [String], missing: [String], corrupt: [String], folders: [String]) {
        self.loaded = loaded
        self.missing = missing
        self.corrupt = corrupt
        self.folders = folders
    }
}

/// daemon.status `face_gallery`: "loading" until the first load ends, then "ready" (with
/// `refreshing` while a large gallery reloads after a change).
public struct GalleryStatus: Codable, Sendable, Equatable {
    public var state: String
    public var templates: Int
    public var loaded: Int
    public var total: Int
    public var refreshing: Bool

    public init(state: String, templates: Int, loaded: Int, total: Int, refreshing: Bool) {
        self.state = state
        self.templates = templates
        self.loaded = loaded
        self.total = total
        self.refreshing = refreshing
    }
}

public struct DaemonStatus: Codable, Sendable {
    public var version: String
    public var uptimeS: Double
    public var pid: Int32
    public var cameras: [String]
    public var models: ModelStatus
    public var users: Int
    /// `active_sessions` (SPEC's name): the camera leases running biometric calls hold now.
    public var activeSessions: Int
    public var clients: Int
    public var socketActivated: Bool
    public var privileged: Bool
    /// The 1:N face gallery: loaded in the background after start.
    public var faceGallery: GalleryStatus?
    /// The template store: open, or refused because of its key (then nothing else is served).
    public var store: StoreStatus?

    enum CodingKeys: String, CodingKey {
        case version, pid, cameras, models, users, clients, privileged, store
        case uptimeS = "uptime_s"
        case activeSessions = "active_sessions"
        case socketActivated = "socket_activated"
        case faceGallery = "face_gallery"
    }

    public init(version: String, uptimeS: Double, pid: Int32, cameras: [String], models: ModelStatus, users: Int,
                activeSessions: Int, clients: Int, socketActivated: Bool, privileged: Bool, faceGallery: GalleryStatus? = nil,
                store: StoreStatus? = nil) {
        self.faceGallery = faceGallery
        self.store = store
        self.version = version
        self.uptimeS = uptimeS
        self.pid = pid
        self.cameras = cameras
        self.models = models
        self.users = users
        self.activeSessions = activeSessions
        self.clients = clients
        self.socketActivated = socketActivated
        self.privileged = privileged
    }
}

/// daemon.status `store`: whether the sealed store is open, and with which key.
public struct StoreStatus: Codable, Sendable, Equatable {
    /// `open`, `key_missing` (the key is gone but sealed rows remain), `key_mismatch` (the key
    /// opens nothing in the database) or `key_unsealable` (the key is sealed to a TPM or host key
    /// that cannot unseal it here). Only `open` serves anything but daemon.status.
    public var state: String
    /// Where the key came from: `credential` (systemd) or `file`; nil when refused.
    public var key: String?
    /// What protects the key at rest: `tpm2` (sealed by the TPM 2.0 and the host key), `host`
    /// (sealed by systemd's host key), `credential` (a plain systemd credential) or `file` (a
    /// 0600 file); nil when refused.
    public var protection: String?
    /// What to do, when refused.
    public var message: String?

    public init(state: String, key: String? = nil, protection: String? = nil, message: String? = nil) {
        self.state = state
        self.key = key
        self.protection = protection
        self.message = message
    }
}

public struct CameraFormatInfo: Codable, Sendable, Equatable {
    public var fourcc: String
    public var width: Int
    public var height: Int
    public var fps: Double

    public init(fourcc: String, width: Int, height: Int, fps: Double) {
        self.fourcc = fourcc
        self.width = width
        self.height = height
        self.fps = fps
    }
}

public struct CameraInfo: Codable, Sendable, Equatable {
    public var id: String
    public var path: String
    public var name: String
    public var driver: String
    public var bus: String
    public var formats: [CameraFormatInfo]
    /// IR frames: grey-only formats, or a node the IR emitter table knows.
    public var ir: Bool
    public var busy: Bool
    /// No sensor behind it (vivid, v4l2loopback, replay). Optional: older daemons do not send it.
    public var virtual: Bool?
    /// The physical device the node belongs to (`usb 04f2:b6d9 1-6`), when it is on USB.
    public var device: String?
    /// The id of the node of the same physical device with the other role (IR ↔ RGB).
    public var sibling: String?

    public init(id: String, path: String, name: String, driver: String, bus: String, formats: [CameraFormatInfo],
                ir: Bool, busy: Bool, virtual: Bool? = nil, device: String? = nil, sibling: String? = nil) {
        self.id = id
        self.path = path
        self.name = name
        self.driver = driver
        self.bus = bus
        self.formats = formats
        self.ir = ir
        self.busy = busy
        self.virtual = virtual
        self.device = device
        self.sibling = sibling
    }
}

public struct SnapshotResult: Codable, Sendable {
    public var camera: String
    public var width: Int
    public var height: Int
    public var ir: Bool
    /// PNG, base64.
    public var image: String
    /// Faces drawn on the image (0 until the face pipeline is available).
    public var faces: Int

    public init(camera: String, width: Int, height: Int, ir: Bool, image: String, faces: Int) {
        self.camera = camera
        self.width = width
        self.height = height
        self.ir = ir
        self.image = image
        self.faces = faces
    }
}

public struct CancelResult: Codable, Sendable {
    public var canceled: Bool
    public init(canceled: Bool) { self.canceled = canceled }
}

public struct WatchResult: Codable, Sendable {
    /// The cameras present when the watch started; changes follow as camera.added / camera.removed.
    public var cameras: [CameraInfo]
    public init(cameras: [CameraInfo]) { self.cameras = cameras }
}

public struct UserRecord: Codable, Sendable, Equatable {
    public var name: String
    public var uuid: String
    public var created: String
    public var faceTemplates: Int
    public var fingerTemplates: Int
    public var pinSet: Bool
    public var policy: [String]

    enum CodingKeys: String, CodingKey {
        case name, uuid, created, policy
        case faceTemplates = "face_templates"
        case fingerTemplates = "finger_templates"
        case pinSet = "pin_set"
    }

    public init(name: String, uuid: String, created: String, faceTemplates: Int, fingerTemplates: Int, pinSet: Bool,
                policy: [String]) {
        self.name = name
        self.uuid = uuid
        self.created = created
        self.faceTemplates = faceTemplates
        self.fingerTemplates = fingerTemplates
        self.pinSet = pinSet
        self.policy = policy
    }
}

public struct UserList: Codable, Sendable {
    public var users: [UserRecord]
    public init(users: [UserRecord]) { self.users = users }
}

public struct DeleteResult: Codable, Sendable {
    public var deleted: Bool
    public var templatesRemoved: Int
    enum CodingKeys: String, CodingKey {
        case deleted
        case templatesRemoved = "templates_removed"
    }
    public init(deleted: Bool, templatesRemoved: Int) {
        self.deleted = deleted
        self.templatesRemoved = templatesRemoved
    }
}

/// Method names of SPEC §4 known to this build.
public enum Method {
    public static let daemonStatus = "daemon.status"
    public static let cameraList = "camera.list"
    public static let cameraWatch = "camera.watch"
    public static let cameraSnapshot = "camera.snapshot"
    public static let sessionCancel = "session.cancel"
    public static let userList = "user.list"
    public static let userGet = "user.get"
    public static let userDelete = "user.delete"
}
