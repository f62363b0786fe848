// swift-tools-version:6.0
// 6.0: the lowest tools version with the Swift 6 language mode (strict concurrency) the sources are written in,
// and the first whose toolchain ships Swift Testing.
import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "KeyboardTelemetryClient",
    // The lowest the code allows: Swift concurrency back-deploys to iOS 13 / macOS 10.15, and the queue writes
    // with FileHandle's throwing write(contentsOf:) and synchronize() (iOS 13.4, macOS 10.15.4). Nothing needs iOS 15.
    platforms: [.iOS("13.4"), .macOS("10.15.4")],
    products: [
        .library(name: "KeyboardTelemetryClient", targets: ["KeyboardTelemetryClient"]),
        // Fakes for tests of an app's own wiring (and this package's): a clock moved by hand, scripted and
        // recording transports, a recording file system.
        .library(name: "KeyboardTelemetryClientTesting", targets: ["KeyboardTelemetryClientTesting"]),
    ],
    // No package dependencies: an app that adds this package resolves nothing else.
    targets: [
        // The system zlib (libz on Linux, in every Apple SDK). Named apart from kbtd's own CZlib: target names are
        // unique across a package graph.
        .systemLibrary(name: "CTelemetryZlib", path: "Sources/CTelemetryZlib"),
        // The library an iOS app embeds: Foundation and zlib (UIKit and SwiftUI seams only where they exist).
        .target(name: "KeyboardTelemetryClient", dependencies: ["CTelemetryZlib"],
                resources: [.copy("PrivacyInfo.xcprivacy")], swiftSettings: strict),
        .target(name: "KeyboardTelemetryClientTesting", dependencies: ["KeyboardTelemetryClient", "CTelemetryZlib"],
                swiftSettings: strict),
        // Everything that needs no kbtd daemon, against the fakes (kbtd's own repository tests the client against a live daemon).
        .testTarget(name: "KeyboardTelemetryClientTests",
                    dependencies: ["KeyboardTelemetryClient", "KeyboardTelemetryClientTesting"], swiftSettings: strict),
    ]
)
