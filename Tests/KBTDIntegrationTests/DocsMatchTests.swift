import Foundation
import KBTDServer
import Testing

/// The docs say what the code does: every setting, every subcommand and option,
/// every metric the code declares is documented. A setting, option or metric added
/// without its doc fails here (CONTRIBUTING.md, "Docs in the same commit").
@Suite("Docs match the code", .ownThreads, .timeLimit(.minutes(10)))
struct DocsMatchTests {
    static func read(_ relativePath: String) throws -> String {
        try String(contentsOf: TestPaths.repositoryRoot.appendingPathComponent(relativePath), encoding: .utf8)
    }

    @Test func everySettingIsInTheConfigFileAndTheSettingsPage() throws {
        let config = try Self.read("Config/kbtd.conf").split(separator: "\n").map(String.init)
        let settingsPage = try Self.read("docs/settings.md")
        var missingFromConfig: [String] = []
        var missingFromDocs: [String] = []
        for setting in Setting.all {
            // `key = value`, commented out or not.
            let inConfig = config.contains { line in
                var text = Substring(line)
                if text.hasPrefix("#") { text = text.dropFirst().drop { $0 == " " } }
                return text.hasPrefix(setting.key + " =") || text == Substring(setting.key + " =")
            }
            if !inConfig { missingFromConfig.append(setting.key) }
            if !settingsPage.contains("| `\(setting.key)` |") { missingFromDocs.append(setting.key) }
        }
        #expect(missingFromConfig.isEmpty, "settings missing from Config/kbtd.conf: \(missingFromConfig)")
        #expect(missingFromDocs.isEmpty, "settings missing from docs/settings.md's table: \(missingFromDocs)")
    }

    /// Subcommand names from the `SUBCOMMANDS:` section of `kbtd --help`.
    static func subcommands(_ help: String) -> [String] {
        var inSection = false
        var names: [String] = []
        for line in help.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("SUBCOMMANDS:") { inSection = true; continue }
            guard inSection else { continue }
            if !line.hasPrefix(" ") { if !line.isEmpty { inSection = false }; continue }
            let trimmed = line.drop { $0 == " " }
            // Option descriptions wrap with deeper indentation; a name starts at two spaces.
            guard line.prefix(2) == "  ", line.dropFirst(2).first != " " else { continue }
            // "  See 'kbtd help <subcommand>' ..." closes the section: names are lower-case words.
            if let name = trimmed.split(separator: " ").first, name.allSatisfy({ $0.isLowercase || $0 == "-" }) {
                names.append(String(name))
            }
        }
        return names
    }

    /// Every `--long-option` a help text lists (not `--help` and `--version`, which every command has).
    static func options(_ help: String) -> Set<String> {
        var found: Set<String> = []
        let characters = Array(help)
        var index = 0
        while index + 2 < characters.count {
            if characters[index] == "-", characters[index + 1] == "-", characters[index + 2].isLetter,
               index == 0 || characters[index - 1] == " " || characters[index - 1] == "[" || characters[index - 1] == "(" {
                var end = index + 2
                while end < characters.count, characters[end].isLetter || characters[end].isNumber || characters[end] == "-" { end += 1 }
                found.insert(String(characters[index..<end]))
                index = end
            } else {
                index += 1
            }
        }
        return found.subtracting(["--help", "--version"])
    }

    /// Options the command-line page does not give a subcommand: each must appear in a line
    /// of the page that names `kbtd SUBCOMMAND` (its table row).
    static func undocumented(subcommand: String, options: Set<String>, page: String) -> [String] {
        let rows = page.split(separator: "\n").filter { $0.contains("`kbtd \(subcommand) ") || $0.contains("`kbtd \(subcommand)`") }
        guard !rows.isEmpty else { return ["(no row for kbtd \(subcommand))"] }
        return options.sorted().filter { option in
            !rows.contains { row in
                row.contains(option + " ") || row.contains(option + "]") || row.contains(option + "`") || row.contains(option + "=")
            }
        }
    }

    @Test func everySubcommandAndOptionIsOnTheCommandLinePage() throws {
        let page = try Self.read("docs/command-line.md")
        let top = try runKBTD(["--help"])
        #expect(top.status == 0)
        let names = Self.subcommands(top.stdout).filter { $0 != "help" }
        #expect(names.count >= 8, "\(top.stdout)")
        var missing: [String: [String]] = [:]
        for name in names {
            let help = try runKBTD([name, "--help"])
            #expect(help.status == 0, "kbtd \(name) --help")
            let gaps = Self.undocumented(subcommand: name, options: Self.options(help.stdout), page: page)
            if !gaps.isEmpty { missing[name] = gaps }
        }
        #expect(missing.isEmpty, "missing from docs/command-line.md: \(missing)")
        #expect(page.contains("kbtd --version"))
    }

    /// Metric names the daemon declares: the descriptors in `Metrics/` (`ServerMetrics`, `StoreMetrics`)
    /// (`name("x", unit: "y", ...)` is `kbtd_x_y`) and the series written by hand (`# TYPE kbtd_...`).
    static func declaredMetrics() throws -> Set<String> {
        let sources = TestPaths.repositoryRoot.appendingPathComponent("Sources/KBTDServer")
        var names: Set<String> = []
        let descriptor = try Regex(#"name\("([a-z_]+)"(?:,\s*unit:\s*"([a-z_]*)")?"#)
        let typed = try Regex(#"# TYPE (kbtd_[a-z0-9_]+)"#)
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)
        while let file = files?.nextObject() as? URL {
            guard file.pathExtension == "swift" else { continue }
            let text = try String(contentsOf: file, encoding: .utf8)
            if file.deletingLastPathComponent().lastPathComponent == "Metrics" {
                for match in text.matches(of: descriptor) {
                    let metric = match.output[1].substring.map(String.init) ?? ""
                    let unit = match.output[2].substring.map(String.init) ?? ""
                    names.insert("kbtd_" + metric + (unit.isEmpty ? "" : "_" + unit))
                }
            }
            for match in text.matches(of: typed) {
                if let name = match.output[1].substring { names.insert(String(name)) }
            }
        }
        return names
    }

    @Test func everyMetricIsOnTheMonitoringPage() throws {
        let page = try Self.read("docs/monitoring.md")
        let names = try Self.declaredMetrics()
        #expect(names.count >= 20, "\(names.sorted())")
        #expect(names.contains("kbtd_height_answers_total") && names.contains("kbtd_store_info"))
        let missing = names.sorted().filter { !page.contains("`\($0)`") && !page.contains("`\($0){") }
        #expect(missing.isEmpty, "metrics missing from docs/monitoring.md: \(missing)")
    }

    /// The status codes kbtd's own code answers with: `HTTPResponse.Status` names used in the
    /// server and command-line sources, and codes written as numbers (`code: 431`, `status: 400`),
    /// plus the router's 404, which Hummingbird answers for kbtd.
    static func statusCodesInTheCode() throws -> Set<Int> {
        let names = ["ok": 200, "accepted": 202, "noContent": 204, "notModified": 304, "badRequest": 400,
                     "unauthorized": 401, "forbidden": 403, "notFound": 404, "methodNotAllowed": 405,
                     "requestTimeout": 408, "conflict": 409, "lengthRequired": 411, "contentTooLarge": 413,
                     "uriTooLong": 414, "unsupportedMediaType": 415, "unprocessableContent": 422, "tooManyRequests": 429,
                     "requestHeaderFieldsTooLarge": 431, "internalServerError": 500, "notImplemented": 501,
                     "serviceUnavailable": 503]
        var codes: Set<Int> = [404]
        let root = TestPaths.repositoryRoot.appendingPathComponent("Sources")
        for directory in ["KBTDServer", "kbtd"] {
            let enumerator = FileManager.default.enumerator(at: root.appendingPathComponent(directory), includingPropertiesForKeys: nil)
            while let file = enumerator?.nextObject() as? URL {
                guard file.pathExtension == "swift" else { continue }
                let text = try String(contentsOf: file, encoding: .utf8)
                for (name, code) in names where text.contains("." + name + ")") || text.contains("." + name + ",")
                    || text.contains("." + name + " ") || text.contains("." + name + "\n") || text.contains(": ." + name) {
                    codes.insert(code)
                }
                for prefix in ["code: ", "status: "] {
                    var rest = Substring(text)
                    while let range = rest.range(of: prefix) {
                        rest = rest[range.upperBound...]
                        if let code = Int(rest.prefix(3)), (100...599).contains(code), !rest.dropFirst(3).first!.isNumber { codes.insert(code) }
                    }
                }
            }
        }
        return codes
    }

    @Test func everyStatusTheServerAnswersIsInTheAPIDocsAndOpenAPI() throws {
        let codes = try Self.statusCodesInTheCode()
        #expect(codes.isSuperset(of: [200, 202, 304, 400, 413, 415, 429, 503]), "the scan finds the codes it should: \(codes.sorted())")
        let page = try Self.read("docs/http-api.md")
        let openAPI = try Self.read("openapi.yaml")
        // The code as a number of its own (not inside 1431 or 4040).
        func mentions(_ text: String, _ code: Int) -> Bool {
            var rest = Substring(text)
            while let range = rest.range(of: String(code)) {
                let before = rest[..<range.lowerBound].last, after = rest[range.upperBound...].first
                if !(before?.isNumber ?? false) && !(after?.isNumber ?? false) { return true }
                rest = rest[range.upperBound...]
            }
            return false
        }
        let missingFromPage = codes.sorted().filter { !mentions(page, $0) }
        let missingFromOpenAPI = codes.sorted().filter { !mentions(openAPI, $0) }
        #expect(missingFromPage.isEmpty, "status codes missing from docs/http-api.md: \(missingFromPage)")
        #expect(missingFromOpenAPI.isEmpty, "status codes missing from openapi.yaml: \(missingFromOpenAPI)")
    }
}
