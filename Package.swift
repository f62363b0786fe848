// swift-tools-version:6.1
import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "kbtd",
    // The daemon is for Linux; macOS for development. The client library is a package of its own
    // (KeyboardTelemetryClient/, with its own platforms).
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "kbtd", targets: ["kbtd"]),
        .library(name: "KBTDCore", targets: ["KBTDCore"]),
        .executable(name: "kbtd-fleet", targets: ["kbtd-fleet"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        // TLS (BoringSSL, through swift-nio-ssl) and HTTP/2 for listeners with tls_certificate/tls_key.
        // Every dependency takes security and bug-fix releases (from:); kbtd uses only their public API.
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        // The iOS client library, a package of its own with no dependencies (published as a repository of its own:
        // scripts/release-client); kbtd-fleet and the tests use it from this folder.
        .package(path: "KeyboardTelemetryClient"),
    ],
    targets: [
        // System libraries: zlib and SQLite come from the OS (Debian's zlib1g-dev, libsqlite3-dev).
        .systemLibrary(name: "CZlib", path: "Sources/CZlib", pkgConfig: "zlib",
                       providers: [.apt(["zlib1g-dev"])]),
        // libdeflate: whole-buffer gzip inflate when the output size is known (KBTDCompression).
        .systemLibrary(name: "CLibdeflate", path: "Sources/CLibdeflate", pkgConfig: "libdeflate",
                       providers: [.apt(["libdeflate-dev"])]),
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3",
                       providers: [.apt(["libsqlite3-dev"])]),
        // glibc's malloc.h, for the daemon's mmap threshold (kbtd serve).
        .systemLibrary(name: "CMalloc", path: "Sources/CMalloc"),

        // The domain: batches, field rules and the intake, aggregation keys, histograms, the estimator. No I/O.
        .target(name: "KBTDCore", dependencies: [.product(name: "OrderedCollections", package: "swift-collections")],
                swiftSettings: strict),
        // Presentation of the domain, no I/O: the dashboard page, the stats and backtest formatters, the height table export.
        .target(name: "KBTDReport", dependencies: ["KBTDCore"], swiftSettings: strict),
        // The references BatchIntake and BodyInflater are checked against (the fuzz oracles): the tree parser and
        // validator, zlib alone. Never linked into kbtd.
        .target(name: "KBTDReference", dependencies: ["KBTDCore", "KBTDCompression"], swiftSettings: strict),
        // Strict, capped inflate (gzip, zlib, raw deflate) over the system libz; a whole gzip member of
        // known size inflates in one call through the system libdeflate.
        .target(name: "KBTDCompression", dependencies: ["CZlib", "CLibdeflate"], swiftSettings: strict),
        // SQLite storage behind the TelemetryStore protocol, and the group-commit writer.
        .target(name: "KBTDStore", dependencies: [
            "KBTDCore", "CSQLite",
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        // PostgreSQL storage behind the same TelemetryStore protocol, for several kbtd nodes on one database.
        .target(name: "KBTDPostgres", dependencies: [
            "KBTDCore", "KBTDStore",
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
        ], swiftSettings: strict),
        // HTTP: the app (routes, middlewares, settings), listeners, systemd; see ARCHITECTURE.md.
        .target(name: "KBTDServer", dependencies: [
            "KBTDCore", "KBTDReport", "KBTDStore", "KBTDPostgres", "KBTDCompression",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            .product(name: "NIOExtras", package: "swift-nio-extras"),
            .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
            .product(name: "NIOHTTPTypesHTTP2", package: "swift-nio-extras"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "NIOTLS", package: "swift-nio"),
            .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            .product(name: "NIOHPACK", package: "swift-nio-http2"),
        ], swiftSettings: strict),
        // The command line: serve, stats, height, evaluate, export, report, reload, migrate, backup, check (and help).
        .executableTarget(name: "kbtd", dependencies: [
            "KBTDCore", "KBTDReport", "KBTDStore", "KBTDPostgres", "KBTDServer", "CMalloc",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        // Fleet simulator built on the client library.
        .executableTarget(name: "kbtd-fleet", dependencies: [
            "KBTDCore",
            .product(name: "KeyboardTelemetryClient", package: "KeyboardTelemetryClient"),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ], swiftSettings: strict),
        // libFuzzer target over inflate + decode + validate + aggregate (scripts/fuzz); replays a corpus otherwise.
        .executableTarget(name: "kbtd-fuzz", dependencies: ["KBTDCore", "KBTDReference", "KBTDReport", "KBTDCompression"], swiftSettings: strict),
        // Load generator and in-process references for Benchmarks/run.
        .executableTarget(name: "kbtd-bench", dependencies: [
            "KBTDCore", "KBTDReference", "KBTDReport", "KBTDCompression", "KBTDStore",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            // `ingest-over`: one client for plain HTTP/1.1, TLS HTTP/1.1 and TLS h2 (packages kbtd already uses).
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            .product(name: "NIOHPACK", package: "swift-nio-http2"),
        ], swiftSettings: strict),
        // Tests, one target per layer (CONTRIBUTING.md "Testing it"). Helpers every test target shares
        // (the daemon, PostgreSQL, nginx, waits, batches, in-process app): `package` declarations.
        .target(name: "KBTDTestSupport", dependencies: [
            "KBTDCore", "KBTDReference", "KBTDReport", "KBTDCompression", "KBTDStore", "KBTDPostgres", "KBTDServer",
            .product(name: "KeyboardTelemetryClient", package: "KeyboardTelemetryClient"),
            .product(name: "KeyboardTelemetryClientTesting", package: "KeyboardTelemetryClient"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOCore", package: "swift-nio"),
        ], path: "Tests/KBTDTestSupport", swiftSettings: strict),
        // The domain, inflate and the reference oracle: pure, in parallel.
        .testTarget(name: "KBTDCoreTests", dependencies: [
            "KBTDTestSupport", "KBTDCore", "KBTDReference", "KBTDCompression",
        ], swiftSettings: strict),
        // Test-only: a VFS that logs every write and sync of a directory's files (the power-loss test rebuilds them).
        .target(name: "CSQLiteRecordingVFS", dependencies: ["CSQLite"], path: "Tests/CSQLiteRecordingVFS"),
        // The SQLite store (and the PostgreSQL schema's parity with it): a file in a temporary directory, no process.
        .testTarget(name: "KBTDStoreTests", dependencies: [
            "KBTDTestSupport", "KBTDCore", "KBTDStore", "KBTDPostgres", "CSQLiteRecordingVFS",
        ], swiftSettings: strict),
        // Routes, middlewares and settings answered in-process (InProcessApp), channel handlers in a pipeline of their own.
        .testTarget(name: "KBTDServerTests", dependencies: [
            "KBTDTestSupport", "KBTDCore", "KBTDCompression", "KBTDStore", "KBTDPostgres", "KBTDServer",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
            .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            .product(name: "NIOHPACK", package: "swift-nio-http2"),
        ], swiftSettings: strict),
        // Everything that needs a process (kbtd, kbtd-fleet, kbtd-fuzz) or a server (PostgreSQL, nginx,
        // Prometheus, a browser), and the client library against a live daemon (its other tests are its own package's).
        .testTarget(name: "KBTDIntegrationTests", dependencies: [
            "KBTDTestSupport", "KBTDCore", "KBTDReport", "KBTDCompression", "KBTDStore", "KBTDPostgres", "KBTDServer", "CZlib",
            .product(name: "KeyboardTelemetryClient", package: "KeyboardTelemetryClient"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
            .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
        ], swiftSettings: strict),
    ]
)
