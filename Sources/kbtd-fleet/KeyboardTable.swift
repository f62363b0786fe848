import Foundation

/// One row of the published heights tables (`data/*.csv` in this repository): docked
/// keyboard heights of a model family, with and without the QuickType bar.
struct ModelFamily: Sendable {
    var name: String
    /// Machine identifiers (`iPhone15,2`).
    var identifiers: [String]
    var isPad: Bool
    var portraitBar: Double
    var portraitNoBar: Double
    var landscapeBar: Double
    var landscapeNoBar: Double
    /// Bottom safe area in portrait and landscape (Face ID phones: 34 and 21; home-indicator iPads: 20).
    var safeAreaPortrait: Double
    var safeAreaLandscape: Double
    /// Screen in points, portrait (`393x852`), per identifier: what the device reports as `device.screen`.
    var screens: [String: String] = [:]
}

/// Loads the two CSVs. Columns are found by the header's names, so a table
/// with more columns or another order still loads; on the phone table the
/// identifiers column itself holds commas (`iPhone10,1 iPhone10,4`), so it
/// takes every cell the header does not account for.
enum KeyboardTable {
    static let phoneFile = "iphone-keyboard-heights.csv"
    static let padFile = "ipad-keyboard-heights.csv"

    struct LoadError: Error, CustomStringConvertible {
        var description: String
    }

    static func load(from directory: URL) throws -> [ModelFamily] {
        let phones = try rows(directory.appendingPathComponent(phoneFile)).map(phone)
        let pads = try rows(directory.appendingPathComponent(padFile)).map(pad)
        guard !phones.isEmpty, !pads.isEmpty else {
            throw LoadError(description: "\(directory.path): no models in \(phoneFile) or \(padFile)")
        }
        return phones + pads
    }

    /// Data rows as header-name -> cell, the first column holding any extra cells.
    static func rows(_ file: URL) throws -> [(file: String, cells: [String: String])] {
        let text: String
        do {
            text = try String(contentsOf: file, encoding: .utf8)
        } catch {
            throw LoadError(description: "cannot read \(file.path): \(error.localizedDescription)")
        }
        let lines = text.split(whereSeparator: \.isNewline).map(String.init)
            .filter { !$0.hasPrefix("#") && !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        guard let header = lines.first?.split(separator: ",", omittingEmptySubsequences: false).map(String.init) else {
            throw LoadError(description: "\(file.path): no header line")
        }
        return try lines.dropFirst().map { line in
            let cells = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            let extra = cells.count - header.count
            guard extra >= 0 else { throw LoadError(description: "\(file.path): short line: \(line)") }
            var row = [header[0]: cells[0...extra].joined(separator: ",")]
            for (offset, name) in header.enumerated().dropFirst() { row[name] = cells[offset + extra] }
            return (file.lastPathComponent, row)
        }
    }

    static func number(_ row: (file: String, cells: [String: String]), _ column: String) throws -> Double {
        guard let value = row.cells[column].flatMap({ Double($0.trimmingCharacters(in: .whitespaces)) }) else {
            throw LoadError(description: "\(row.file): column \(column) missing or not a number in \(row.cells)")
        }
        return value
    }

    private static func phone(_ row: (file: String, cells: [String: String])) throws -> ModelFamily {
        let identifiers = (row.cells["identifiers"] ?? "").split(separator: " ").map(String.init)
        guard !identifiers.isEmpty else { throw LoadError(description: "\(row.file): a row without identifiers") }
        // Face ID phones (812 pt tall and up) have the 34 pt home-indicator inset.
        let screenHeight = try number(row, "screen_h")
        let faceID = screenHeight >= 812
        let screenWidth = try number(row, "screen_w")
        let screen = "\(Int(screenWidth))x\(Int(screenHeight))"
        return ModelFamily(name: row.cells["models"] ?? identifiers[0], identifiers: identifiers, isPad: false,
                           portraitBar: try number(row, "portrait_bar"), portraitNoBar: try number(row, "portrait_nobar"),
                           landscapeBar: try number(row, "landscape_bar"), landscapeNoBar: try number(row, "landscape_nobar"),
                           safeAreaPortrait: faceID ? 34 : 0, safeAreaLandscape: faceID ? 21 : 0,
                           screens: Dictionary(uniqueKeysWithValues: identifiers.map { ($0, screen) }))
    }

    private static func pad(_ row: (file: String, cells: [String: String])) throws -> ModelFamily {
        let name = row.cells["ipad"] ?? ""
        let known = padIdentifiers[name]
        // A family this table does not know still gets a valid, stable machine identifier.
        let fallback = "iPad-" + String(name.unicodeScalars.filter { CharacterSet.alphanumerics.contains($0) }.map(Character.init)).prefix(27)
        let homeIndicator = known?.homeIndicator ?? false
        return ModelFamily(name: "iPad " + name, identifiers: known?.identifiers ?? [fallback], isPad: true,
                           portraitBar: try number(row, "portrait_bar"), portraitNoBar: try number(row, "portrait_nobar"),
                           landscapeBar: try number(row, "landscape_bar"), landscapeNoBar: try number(row, "landscape_nobar"),
                           safeAreaPortrait: homeIndicator ? 20 : 0, safeAreaLandscape: homeIndicator ? 20 : 0,
                           screens: padScreens.filter { (known?.identifiers ?? []).contains($0.key) })
    }

    /// iPad screens in points, portrait, per identifier: the iPad table has no screen columns.
    /// Source: Apple Human Interface Guidelines, "Layout", device screen sizes (points):
    /// 9.7" 768x1024, 10.2" 810x1080, 10.5" 834x1112, 11" 834x1194, mini 6 744x1133, 12.9" 1024x1366.
    static let padScreens: [String: String] = {
        var screens: [String: String] = [:]
        for id in ["iPad6,11", "iPad6,12", "iPad7,5", "iPad7,6"] { screens[id] = "768x1024" }
        for id in ["iPad7,11", "iPad7,12", "iPad11,6", "iPad11,7", "iPad12,1", "iPad12,2"] { screens[id] = "810x1080" }
        for id in ["iPad7,3", "iPad7,4"] { screens[id] = "834x1112" }
        for id in ["iPad8,1", "iPad8,3", "iPad8,9", "iPad13,4", "iPad13,5", "iPad14,3", "iPad14,4"] { screens[id] = "834x1194" }
        for id in ["iPad14,1", "iPad14,2"] { screens[id] = "744x1133" }
        for id in ["iPad6,7", "iPad6,8", "iPad7,1", "iPad7,2", "iPad8,5", "iPad8,7", "iPad8,11", "iPad13,8", "iPad13,9",
                   "iPad14,5", "iPad14,6"] { screens[id] = "1024x1366" }
        return screens
    }()

    /// Machine identifiers of the iPad families the table names (public, e.g. DeviceKit),
    /// and whether they have a home indicator instead of a home button.
    static let padIdentifiers: [String: (identifiers: [String], homeIndicator: Bool)] = [
        "9.7in / 10.2in / Pro 10.5": (["iPad6,11", "iPad6,12", "iPad7,5", "iPad7,6", "iPad7,11", "iPad7,12", "iPad11,6",
                                       "iPad11,7", "iPad12,1", "iPad12,2", "iPad7,3", "iPad7,4"], false),
        "Pro 11": (["iPad8,1", "iPad8,3", "iPad8,9", "iPad13,4", "iPad13,5", "iPad14,3", "iPad14,4"], true),
        "mini 6": (["iPad14,1", "iPad14,2"], true),
        "Pro 12.9 (1st/2nd gen)": (["iPad6,7", "iPad6,8", "iPad7,1", "iPad7,2"], false),
        "Pro 12.9 (3rd gen and later)": (["iPad8,5", "iPad8,7", "iPad8,11", "iPad13,8", "iPad13,9", "iPad14,5", "iPad14,6"], true),
    ]

    /// `--data DIR`, else the repository's `data/` found without flags: next to
    /// the executable or any folder above it (`.build/debug/kbtd-fleet` in a
    /// clone), the package root this binary was built from, or the working
    /// directory. `swift run kbtd-fleet` in a fresh clone finds it either way.
    static func locate(explicit: String?) throws -> URL {
        let fileManager = FileManager.default
        if let explicit {
            let url = URL(fileURLWithPath: explicit)
            guard fileManager.fileExists(atPath: url.appendingPathComponent(phoneFile).path) else {
                throw LoadError(description: "--data \(explicit): no \(phoneFile) there")
            }
            return url
        }
        var candidates: [URL] = []
        // The executable's folder and each one above it.
        var folder = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        while folder.path != "/" && !folder.path.isEmpty {
            candidates.append(folder.appendingPathComponent("data"))
            folder = folder.deletingLastPathComponent()
        }
        // Sources/kbtd-fleet/KeyboardTable.swift -> the package root.
        let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        candidates.append(packageRoot.appendingPathComponent("data"))
        candidates.append(URL(fileURLWithPath: fileManager.currentDirectoryPath).appendingPathComponent("data"))
        for candidate in candidates where fileManager.fileExists(atPath: candidate.appendingPathComponent(phoneFile).path) {
            return candidate.standardizedFileURL
        }
        throw LoadError(description: "cannot find \(phoneFile): tried \(candidates.map { $0.standardizedFileURL.path }); pass --data DIR")
    }
}
