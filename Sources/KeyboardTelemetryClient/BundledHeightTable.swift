import Foundation

/// The table `kbtd export` writes (format `kbtd-height-table`, version 1),
/// shipped in the app bundle so a fresh install lays out its first keyboard
/// for a measured height instead of the constant.
///
/// ```swift
/// configuration.bundledHeights = try BundledHeightTable(contentsOf: Bundle.main.url(forResource: "kbtd-heights", withExtension: "json")!)
/// ```
public struct BundledHeightTable: Sendable, Equatable {
    /// Why a table could not be read.
    public struct FormatError: Error, CustomStringConvertible {
        public var description: String
    }

    struct Model: Codable, Equatable {
        var screen: String?
        var heights: [String: Double]
        var `default`: [String: Double]?
    }

    private struct Document: Codable {
        var format: String
        var version: Int
        var models: [String: Model]?
        var screens: [String: [String: Double]]?
    }

    let models: [String: Model]
    let screens: [String: [String: Double]]

    /// Reads a table from `kbtd export`'s JSON; rejects other documents and newer versions.
    public init(data: Data) throws {
        let document: Document
        do {
            document = try JSONDecoder().decode(Document.self, from: data)
        } catch {
            throw FormatError(description: "not a kbtd height table: \(error)")
        }
        guard document.format == "kbtd-height-table" else {
            throw FormatError(description: "format is \(document.format), not kbtd-height-table")
        }
        guard document.version == 1 else {
            throw FormatError(description: "version \(document.version) is not supported (this client reads version 1)")
        }
        models = document.models ?? [:]
        screens = document.screens ?? [:]
    }

    /// Reads a table from a file (the app bundle's copy).
    public init(contentsOf url: URL) throws {
        try self.init(data: Data(contentsOf: url))
    }

    /// How many models the table knows.
    public var modelCount: Int { models.count }

    /// The table's answer: the model's height for the key, else the model's
    /// height for any language, else the height of models with the same screen.
    public func height(model: String, screen: String?, language: String, orientation: KeyboardOrientation,
                       keyboardType: KeyboardType) -> Double? {
        let key = HeightCache.key(language, orientation, keyboardType)
        let entry = models[model]
        if let height = entry?.heights[key] ?? entry?.default?[orientation.rawValue] { return height }
        guard let screen = screen ?? entry?.screen else { return nil }
        return screens[screen]?[key]
    }
}
