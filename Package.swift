// swift-tools-version:6.0
import PackageDescription

// Only the OpenCV modules we use, per target: linking all of opencv4's ~60 modules costs 0.5 s at
// start. (dnn runs YuNet, the hand models and LEADER, calib3d solvePnP; objdetect's FaceDetectorYN is not used: OpenCV 4.6's
// cannot read the 2023 YuNet model.) Nothing the daemon links pulls in imgcodecs, videoio or
// ximgproc: Debian's imgcodecs links GDAL, poppler, GDCM and OpenEXR, videoio FFmpeg, GStreamer,
// libdc1394 and libgphoto2, ximgproc imgcodecs — ~270 libraries and ~60 MiB of RSS in a daemon that
// decodes a PNG or a JPEG (Docs/benchmarks.md "Memory"). Still images go through libpng,
// libjpeg-turbo, libtiff and libwebp; video files through FFmpeg's libraries loaded at the first
// video opened (CImaging); ridge maps are thinned by CFingerVision's own Guo-Hall (thinning.cpp).
func openCV(_ modules: String...) -> [LinkerSetting] { modules.map { .linkedLibrary("opencv_" + $0) } }
/// The still-image codecs' libraries (CImaging/codecs.cpp).
let imageCodecLibraries: [LinkerSetting] = ["png16", "jpeg", "tiff", "webp"].map { .linkedLibrary($0) }
// Debian's dlib is built with DLIB_USE_BLAS/LAPACK: its header templates call cblas_* and LAPACK
// (dgesvd_) directly, so those libraries are linked too. Only the face target uses dlib.
let dlibLibraries: [LinkerSetting] = ["dlib", "blas", "lapack"].map { .linkedLibrary($0) }
// The C++ vision targets: OpenCV's headers, and optimised even in debug builds (dlib and OpenCV
// are header templates: unoptimised they are unusably slow, a face frame takes seconds).
let visionCxxSettings: [CXXSetting] = [
    .unsafeFlags(["-I/usr/include/opencv4"]),
    .unsafeFlags(["-O2"], .when(configuration: .debug)),
]

let package = Package(
    name: "biometricd",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "biometricd", targets: ["biometricd"]),
        .executable(name: "authctl", targets: ["authctl"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        // Raw POSIX calls with typed errors (Errno); already resolved as swift-nio's dependency.
        .package(url: "https://github.com/apple/swift-system.git", from: "1.4.0"),
        // X.509 (and its ASN.1) for the FIDO authenticator's per-credential attestation certificates.
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
    ],
    targets: [
        // MARK: Thin native shims (plain C APIs)
        .target(name: "CV4L2", path: "Sources/CV4L2", linkerSettings: [.linkedLibrary("v4l2")]),
        .target(name: "CSystemd", path: "Sources/CSystemd", linkerSettings: [.linkedLibrary("systemd")]),
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite"),
        .systemLibrary(name: "COpenBLAS", path: "Sources/COpenBLAS"),
        .systemLibrary(name: "CArgon2", path: "Sources/CArgon2"),
        // The 1:N face search kernel (vectorised; optimised in debug builds too, so tests and
        // benchmarks see the same code).
        .target(name: "CSearch", path: "Sources/CSearch", cSettings: [.unsafeFlags(["-O3"])]),
        // The PAM module: plain C. `swift build` compiles it (so CI checks it); the installable
        // pam_biometricd.so is linked by scripts/build-pam.sh with cc from the same files, because
        // a SwiftPM dynamic library always needs libswiftCore, which must not be loaded into sudo.
        .target(
            name: "PAMBiometricd",
            path: "Sources/PAM",
            // The enrolment PAM service file of the password helper (password_helper.c, built by
            // scripts/build-password-helper.sh and compiled to nothing here).
            exclude: ["biometricd-enroll.pam"],
            cSettings: [.unsafeFlags(["-fvisibility=hidden", "-Wall", "-Wextra", "-Werror"])],
            linkerSettings: [.linkedLibrary("pam"), .linkedLibrary("systemd")]
        ),
        // The native vision layer (C++ over OpenCV and dlib behind plain C APIs, prefix cvis_), one
        // target per layer. CImaging is the base: status codes and the one thread-local last error
        // (cvis_last_error), frame conversion, image/video reading, PNG/JPEG encoding; its C++
        // helper header (cvision_internal.hpp) is shared by the others and kept out of Swift.
        .target(
            name: "CImaging",
            path: "Sources/CImaging",
            cxxSettings: visionCxxSettings,
            linkerSettings: openCV("core", "imgproc") + imageCodecLibraries
        ),
        // Face detection, landmarks, pose, embeddings (dlib), presentation-attack cues.
        .target(
            name: "CFaceVision",
            dependencies: ["CImaging"],
            path: "Sources/CFaceVision",
            cxxSettings: visionCxxSettings,
            linkerSettings: openCV("core", "imgproc", "dnn", "calib3d") + dlibLibraries
        ),
        // Hands (MediaPipe's palm and landmark networks through dnn), fingertips and their prints,
        // print extraction (classical and learned: dnn runs LEADER), matching and 1:N index codes (no dlib).
        .target(
            name: "CFingerVision",
            dependencies: ["CImaging"],
            path: "Sources/CFingerVision",
            // The learned extractor's network runs on oneDNN (libdnnl, OpenMP) and its graph is
            // read with libonnx's protobuf classes (leader_net.cpp).
            cxxSettings: visionCxxSettings + [.define("ONNX_ML", to: "1"), .define("ONNX_NAMESPACE", to: "onnx")],
            linkerSettings: openCV("core", "imgproc", "dnn") + ["dnnl", "onnx_proto", "protobuf", "gomp"].map { .linkedLibrary($0) }
        ),

        // MARK: Libraries, one per layer
        // The words the biometric domain and the wire share (feedback codes, liveness modes and
        // verdicts, hands and digits, factors, match candidates) and their wire coding: no
        // dependencies, so Face, Finger and Auth speak them without depending on the wire contract.
        .target(name: "BiometricVocabulary", path: "Sources/Vocabulary"),
        // The JSON-RPC wire contract (re-exports BiometricVocabulary).
        .target(name: "BiometricProtocol", dependencies: ["BiometricVocabulary"], path: "Sources/Protocol"),
        // What every layer shares: frames and pixel buffers, image decoding and encoding, the
        // analysis pool, and the FAR-score calibration of both modalities.
        .target(name: "BiometricCore", dependencies: ["CImaging"], path: "Sources/Core"),
        .target(
            name: "BiometricAuth",
            dependencies: ["BiometricVocabulary", "CArgon2", .product(name: "Crypto", package: "swift-crypto")],
            path: "Sources/Auth"
        ),
        .target(
            name: "BiometricCamera",
            dependencies: ["BiometricCore", "CV4L2", "CImaging", .product(name: "Logging", package: "swift-log")],
            path: "Sources/Camera"
        ),
        .target(
            name: "BiometricFace",
            dependencies: ["BiometricCore", "BiometricVocabulary", "CFaceVision", "COpenBLAS", "CSearch"],
            path: "Sources/Face"
        ),
        .target(
            name: "BiometricFinger",
            dependencies: ["BiometricCore", "BiometricVocabulary", "CFingerVision", "CImaging", "COpenBLAS"],
            path: "Sources/Finger"
        ),
        .target(
            name: "BiometricStore",
            dependencies: [
                "CSQLite", "BiometricAuth", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "Sources/Store"
        ),
        .target(
            name: "BiometricDaemon",
            dependencies: [
                "BiometricCore", "BiometricProtocol", "BiometricAuth", "BiometricCamera", "BiometricStore", "BiometricFace", "BiometricFinger",
                "BiometricFIDO", "CSystemd",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Sources/Daemon"
        ),
        .target(name: "BiometricClient", dependencies: ["BiometricProtocol"], path: "Sources/Client"),
        // The FIDO2 authenticator: CBOR, CTAPHID framing and CTAP2, pure logic behind protocol seams
        // (user verification, PIN, credential store) so it is tested without a device or a daemon.
        .target(
            name: "BiometricFIDO",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            path: "Sources/FIDO"
        ),

        // MARK: Executables
        .executableTarget(
            name: "biometricd",
            dependencies: ["BiometricDaemon", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Sources/biometricd"
        ),
        .executableTarget(
            name: "authctl",
            dependencies: ["BiometricClient", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Sources/authctl"
        ),
        .executableTarget(
            name: "biometricd-bench",
            dependencies: ["BiometricClient", "BiometricProtocol", "BiometricAuth", "BiometricStore", "BiometricFace"],
            path: "Sources/bench"
        ),
        .executableTarget(
            name: "biometricd-face-bench",
            dependencies: ["BiometricFace", "BiometricCore", "BiometricProtocol", "BiometricDaemon", "BiometricCamera", "CFaceVision", "CImaging",
                           "COpenBLAS"],
            path: "Sources/face-bench"
        ),
        .executableTarget(
            name: "biometricd-finger-bench",
            dependencies: ["BiometricFinger", "BiometricCore", "BiometricCamera", "CImaging", "CHandScene"],
            path: "Sources/finger-bench"
        ),
        // Test support: the synthetic hand-scene renderer (C++), for tests, the finger benchmark and
        // finger-scene; nothing the daemon links depends on it.
        .target(
            name: "CHandScene",
            dependencies: ["CImaging", "CFingerVision"],
            path: "Tests/Support/CHandScene",
            cxxSettings: visionCxxSettings,
            linkerSettings: openCV("core", "imgproc")
        ),
        // Test support: OpenCV's own imgcodecs, videoio and ximgproc, which the daemon no longer
        // links, as references that CImaging's decoders and CFingerVision's thinning are checked
        // against pixel for pixel (CodecTests, ThinningTests).
        .target(
            name: "CVisionReference",
            path: "Tests/Support/CVisionReference",
            cxxSettings: visionCxxSettings,
            linkerSettings: openCV("core", "imgproc", "imgcodecs", "videoio", "ximgproc")
        ),
        .executableTarget(
            name: "finger-scene",
            dependencies: ["BiometricFinger", "BiometricCore", "BiometricCamera", "CImaging", "CHandScene", "CVisionReference"],
            path: "Tests/Support/FingerScene"
        ),
        // The FIDO authenticator over the test socket with a verifier the test controls (Tests/fido).
        .executableTarget(
            name: "fido-test-authenticator",
            dependencies: ["BiometricFIDO"],
            path: "Tests/Support/FIDOTestAuthenticator"
        ),
        .executableTarget(
            name: "store-crash-writer",
            dependencies: ["BiometricStore"],
            path: "Tests/Support/StoreCrashWriter"
        ),

        // What tests need from their environment: a skip on a developer's machine, a failure in CI.
        .target(name: "TestRequirements", path: "Tests/Support/TestRequirements"),

        // MARK: Tests, beside each module
        .testTarget(name: "CoreTests", dependencies: ["BiometricCore"], path: "Tests/CoreTests"),
        .testTarget(name: "ProtocolTests", dependencies: ["BiometricProtocol"], path: "Tests/ProtocolTests"),
        .testTarget(name: "ClientTests", dependencies: ["BiometricClient", "BiometricProtocol"], path: "Tests/ClientTests"),
        .testTarget(name: "CameraTests", dependencies: ["TestRequirements", "BiometricCamera", "BiometricCore", "CImaging", "CVisionReference"],
                    path: "Tests/CameraTests"),
        .testTarget(
            name: "StoreTests", dependencies: ["TestRequirements", "BiometricStore", .product(name: "SystemPackage", package: "swift-system")],
            path: "Tests/StoreTests"
        ),
        .testTarget(name: "AuthTests", dependencies: ["BiometricAuth", "BiometricStore"], path: "Tests/AuthTests"),
        .testTarget(
            name: "FIDOTests",
            dependencies: [
                "BiometricFIDO", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"), .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            path: "Tests/FIDOTests"
        ),
        .testTarget(name: "FaceTests", dependencies: ["TestRequirements", "BiometricFace", "BiometricCore", "BiometricProtocol", "BiometricCamera", "CImaging"],
                    path: "Tests/FaceTests"),
        .testTarget(
            name: "FingerTests",
            dependencies: ["TestRequirements", "BiometricFinger", "BiometricCore", "BiometricProtocol", "BiometricCamera", "CFingerVision", "CImaging", "CHandScene",
                           "CVisionReference"],
            path: "Tests/FingerTests"
        ),
        .testTarget(
            name: "DaemonTests",
            dependencies: [
                "TestRequirements", "BiometricDaemon", "BiometricClient", "BiometricProtocol", "BiometricAuth", "BiometricFIDO", "CImaging",
                "BiometricCore", "BiometricFace", "BiometricFinger", "CVisionReference",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            path: "Tests/DaemonTests"
        ),
    ],
    cxxLanguageStandard: .cxx17
)
