import Foundation
import Testing

/// `PrivacyInfo.xcprivacy` says what the sources do: every category of Apple's required-reason API
/// the client's Swift sources use is declared, with an approved reason, and nothing else is; the
/// collected data and tracking answers are the documented ones (docs/privacy.md).
@Suite("PrivacyInfo.xcprivacy matches the sources")
struct PrivacyManifestTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let sources = packageRoot.appendingPathComponent("Sources/KeyboardTelemetryClient")
    static let manifest = sources.appendingPathComponent("PrivacyInfo.xcprivacy")

    /// Apple's required-reason API ("Describing use of required reason API"): the symbols of each
    /// category (`attributesOfItem` too: its answer carries the file timestamps), and the approved reasons.
    static let categories: [String: (symbols: [String], reasons: Set<String>)] = [
        "NSPrivacyAccessedAPICategoryFileTimestamp": (
            ["creationDate", "modificationDate", "fileModificationDate", "contentModificationDateKey", "creationDateKey",
             "attributesOfItem", "getattrlist(", "getattrlistbulk(", "fgetattrlist(", "getattrlistat(",
             "stat(", "fstat(", "fstatat(", "lstat("],
            ["DDA9.1", "C617.1", "3B52.1", "0A2A.1"]),
        "NSPrivacyAccessedAPICategorySystemBootTime": (
            ["systemUptime", "mach_absolute_time("], ["35F9.1", "8FFB.1", "3D61.1"]),
        "NSPrivacyAccessedAPICategoryDiskSpace": (
            ["volumeAvailableCapacityKey", "volumeAvailableCapacityForImportantUsageKey",
             "volumeAvailableCapacityForOpportunisticUsageKey", "volumeTotalCapacityKey", "systemFreeSize", "systemSize",
             "statfs(", "statvfs(", "fstatfs(", "fstatvfs("],
            ["85F4.1", "E174.1", "7D9E.1", "B728.1"]),
        "NSPrivacyAccessedAPICategoryActiveKeyboards": (["activeInputModes"], ["3EC4.1", "54BD.1"]),
        "NSPrivacyAccessedAPICategoryUserDefaults": (["UserDefaults", "NSUserDefaults"], ["CA92.1", "1C8F.1", "C56D.1", "AC6B.1"]),
    ]

    /// Swift source without comments and string literals: a doc comment naming an API is not a use.
    static func code(_ source: String) -> String {
        var text = source
        for pattern in [#""""[\s\S]*?""""#, #""(?:\\.|[^"\\\n])*""#, #"/\*[\s\S]*?\*/"#, #"//[^\n]*"#] {
            text = text.replacingOccurrences(of: pattern, with: " ", options: .regularExpression)
        }
        return text
    }

    /// The categories `source` uses, each with the first symbol seen.
    static func usedCategories(in source: String) -> [String: String] {
        let code = code(source)
        var used: [String: String] = [:]
        for (category, entry) in categories {
            for symbol in entry.symbols {
                let name = symbol.hasSuffix("(") ? String(symbol.dropLast()) : symbol
                let pattern = "(?<![A-Za-z0-9_])" + NSRegularExpression.escapedPattern(for: name)
                    + (symbol.hasSuffix("(") ? #"\s*\("# : "(?![A-Za-z0-9_])")
                if code.range(of: pattern, options: .regularExpression) != nil {
                    used[category] = symbol
                    break
                }
            }
        }
        return used
    }

    static func sourceFiles() throws -> [URL] {
        let enumerator = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)
        var files: [URL] = []
        while let file = enumerator?.nextObject() as? URL {
            if file.pathExtension == "swift" { files.append(file) }
        }
        return files
    }

    static func readManifest() throws -> [String: Any] {
        let data = try Data(contentsOf: manifest)
        return try #require(try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
    }

    @Test func theDetectorSeesCodeAndIgnoresCommentsAndStrings() {
        #expect(Self.usedCategories(in: "let up = ProcessInfo.processInfo.systemUptime") == ["NSPrivacyAccessedAPICategorySystemBootTime": "systemUptime"])
        #expect(Self.usedCategories(in: "if stat(path, &info) == 0 {}").keys.contains("NSPrivacyAccessedAPICategoryFileTimestamp"))
        #expect(Self.usedCategories(in: "let d = UserDefaults.standard").keys.sorted() == ["NSPrivacyAccessedAPICategoryUserDefaults"])
        #expect(Self.usedCategories(in: "let k: URLResourceKey = .volumeAvailableCapacityForImportantUsageKey").keys.sorted()
                == ["NSPrivacyAccessedAPICategoryDiskSpace"])
        #expect(Self.usedCategories(in: "/// never calls systemUptime\n// nor UserDefaults\nlet s = \"stat(x)\"\nlet status = statusCode(1)").isEmpty)
    }

    @Test func everyRequiredReasonAPICategoryTheSourcesUseIsDeclaredAndNoOther() throws {
        var used: [String: String] = [:]
        for file in try Self.sourceFiles() {
            for (category, symbol) in Self.usedCategories(in: try String(contentsOf: file, encoding: .utf8)) {
                used[category] = "\(symbol) in \(file.lastPathComponent)"
            }
        }
        let entries = try #require(Self.readManifest()["NSPrivacyAccessedAPITypes"] as? [[String: Any]])
        var declared: [String: [String]] = [:]
        for entry in entries {
            let category = try #require(entry["NSPrivacyAccessedAPIType"] as? String)
            declared[category] = entry["NSPrivacyAccessedAPITypeReasons"] as? [String] ?? []
        }
        for (category, use) in used where declared[category] == nil {
            Issue.record("the sources use \(category) (\(use)) but PrivacyInfo.xcprivacy does not declare it")
        }
        for category in declared.keys where used[category] == nil {
            Issue.record("PrivacyInfo.xcprivacy declares \(category) but the sources no longer use it")
        }
        for (category, reasons) in declared {
            let approved = try #require(Self.categories[category]?.reasons, "\(category) is not a required-reason category")
            #expect(!reasons.isEmpty && Set(reasons).isSubset(of: approved), "\(category): \(reasons), approved \(approved.sorted())")
        }
        #expect(try Self.sourceFiles().count >= 10, "the sources were found")
    }

    @Test func collectedDataIsPerformanceDataForAppFunctionalityNeitherLinkedNorTracking() throws {
        let manifest = try Self.readManifest()
        #expect(manifest["NSPrivacyTracking"] as? Bool == false)
        #expect((manifest["NSPrivacyTrackingDomains"] as? [Any])?.isEmpty == true)
        let collected = try #require(manifest["NSPrivacyCollectedDataTypes"] as? [[String: Any]])
        #expect(collected.count == 1)
        let performance = try #require(collected.first)
        #expect(performance["NSPrivacyCollectedDataType"] as? String == "NSPrivacyCollectedDataTypePerformanceData")
        #expect(performance["NSPrivacyCollectedDataTypeLinked"] as? Bool == false)
        #expect(performance["NSPrivacyCollectedDataTypeTracking"] as? Bool == false)
        #expect(performance["NSPrivacyCollectedDataTypePurposes"] as? [String] == ["NSPrivacyCollectedDataTypePurposeAppFunctionality"])
    }

    @Test func theManifestShipsAsAResourceOfTheClientTarget() throws {
        let manifest = try String(contentsOf: Self.packageRoot.appendingPathComponent("Package.swift"), encoding: .utf8)
        #expect(manifest.contains(#"resources: [.copy("PrivacyInfo.xcprivacy")]"#))
    }
}
