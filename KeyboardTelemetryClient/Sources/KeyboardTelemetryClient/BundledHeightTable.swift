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
        /// Answers per OS major (`"26"`) and release (`"26.2"`) where they differ (tables
        /// from before releases have none).
        var os: [String: [String: Double]]?
        /// First-show latencies per OS major (`"26"`), where kbtd had them (tables from before have none).
        var coldStart: [String: KeyboardColdStart]?
        /// Answers per reported screen (`"320x693"`, a Display Zoom phone) where they differ from
        /// `heights` (tables from before screen variants have none).
        var screenVariants: [String: [String: Double]]?

        enum CodingKeys: String, CodingKey {
            case screen, heights, `default`, os, coldStart = "cold_start", screenVariants = "screen_variants"
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            screen = try container.decodeIfPresent(String.self, forKey: .screen)
            heights = try container.decode([String: Double].self, forKey: .heights)
            `default` = try container.decodeIfPresent([String: Double].self, forKey: .default)
            os = try container.decodeIfPresent([String: [String: Double]].self, forKey: .os)
            // A member of another shape (a newer kbtd's) reads as none: the rest of the table still answers.
            screenVariants = (try? container.decodeIfPresent([String: [String: Double]].self, forKey: .screenVariants)) ?? nil
            let majors = try? container.decodeIfPresent([String: LenientColdStart].self, forKey: .coldStart)
            coldStart = majors?.compactMapValues(\.value)
        }
    }

    /// One OS major's `cold_start` entry, nil when it is not of the known shape.
    private struct LenientColdStart: Decodable {
        var value: KeyboardColdStart?

        init(from decoder: any Decoder) throws {
            value = try? KeyboardColdStart(from: decoder)
            if value?.withoutPrewarm == nil && value?.withPrewarm == nil { value = nil }
        }
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

    /// The table's answer: the model's height for the key on the device's screen where that
    /// screen has a height of its own (`screen`, e.g. `320x693` on a Display Zoom phone), else on
    /// the device's release (`os`, e.g. `26.2.1`: the greatest release of its major at or below it
    /// that the table lists for the key, else its major's), else the model's height for the key,
    /// else the model's height for any language, else the height of models with the same screen.
    public func height(model: String, os: String? = nil, screen: String?, language: String,
                       orientation: KeyboardOrientation, keyboardType: KeyboardType) -> Double? {
        let key = HeightCache.key(language, orientation, keyboardType)
        let entry = models[model]
        if let screen, let height = entry?.screenVariants?[screen]?[key] { return height }
        if let releases = entry?.os, let os, let height = Self.release(os, key, in: releases) { return height }
        if let height = entry?.heights[key] ?? entry?.default?[orientation.rawValue] { return height }
        guard let screen = screen ?? entry?.screen else { return nil }
        return screens[screen]?[key]
    }

    /// The model's first-show latencies on the OS major of `os` (`26.1` reads `"26"`); nil when the
    /// table has none.
    public func coldStart(model: String, os: String) -> KeyboardColdStart? {
        guard let major = os.split(separator: ".", omittingEmptySubsequences: false).first, Int(major) != nil else { return nil }
        return models[model]?.coldStart?[String(major)]
    }

    /// The key's answer for release `os` (`major.minor[.patch]`) among a model's `os` entries.
    static func release(_ os: String, _ key: String, in releases: [String: [String: Double]]) -> Double? {
        let parts = os.split(separator: ".", omittingEmptySubsequences: false)
        guard let first = parts.first, let major = Int(first) else { return nil }
        let minor = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
        // The greatest release of this major at or below the device's that lists the key.
        var best: (minor: Int, height: Double)?
        for (name, heights) in releases {
            let release = name.split(separator: ".", omittingEmptySubsequences: false)
            guard release.count == 2, Int(release[0]) == major, let listed = Int(release[1]), listed <= minor,
                  let height = heights[key], listed > best?.minor ?? -1 else { continue }
            best = (listed, height)
        }
        if let best { return best.height }
        return releases["\(major)"]?[key]
    }
}
