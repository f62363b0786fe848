/// A device screen in points, portrait (`393x852`): what `device.screen` and
/// the `screen=` query parameter carry. Models that share a screen size almost
/// always share a keyboard, which is what the `screen+language` level uses.
public struct ScreenSize: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var width: Int
    public var height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// Parses `"WIDTHxHEIGHT"` (decimal integers without leading zeros, each 1...4096), or nil.
    public init?(_ text: String) {
        guard Self.problem(text) == nil else { return nil }
        let parts = text.split(separator: "x")
        self.init(width: Int(parts[0])!, height: Int(parts[1])!)
    }

    /// Why `text` is not a screen size, or nil (shared by ingest and the height queries).
    public static func problem(_ text: String) -> String? {
        let reason = "must be WIDTHxHEIGHT in points, each 1 to 4096, like 393x852"
        let parts = text.split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return reason }
        for part in parts {
            guard (1...4).contains(part.utf8.count), part.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                  part.utf8.first != UInt8(ascii: "0"), let value = Int(part), (1...4096).contains(value) else { return reason }
        }
        return nil
    }

    public var description: String { "\(width)x\(height)" }

    public static func < (a: Self, b: Self) -> Bool { (a.width, a.height) < (b.width, b.height) }
}

/// Which screens each model reported (counted per batch), and the models per
/// screen: the `model_screens` table, in memory.
///
/// A model is listed under every screen it reported, but only while that
/// screen is at least a tenth of its reports, and at most
/// `screensPerModel` screens are kept per model: a few batches claiming an odd
/// screen for a popular model neither pull its heights into that screen's
/// answers nor grow memory without bound.
public struct ScreenDirectory: Sendable, Equatable {
    public private(set) var countsByModel: [String: [ScreenSize: Int64]] = [:]
    private var totalsByModel: [String: Int64] = [:]
    private var candidatesByScreen: [ScreenSize: Set<String>] = [:]
    static let screensPerModel = 16

    public init() {}

    public mutating func add(model: String, screen: ScreenSize, count: Int64) {
        guard count > 0 else { return }
        totalsByModel[model, default: 0] += count
        guard countsByModel[model]?[screen] != nil || (countsByModel[model]?.count ?? 0) < Self.screensPerModel else { return }
        countsByModel[model, default: [:]][screen, default: 0] += count
        candidatesByScreen[screen, default: []].insert(model)
    }

    /// The models that reported `screen` for at least a tenth of their batches.
    public func models(withScreen screen: ScreenSize) -> Set<String> {
        (candidatesByScreen[screen] ?? []).filter { model in
            (countsByModel[model]?[screen] ?? 0) * 10 >= (totalsByModel[model] ?? 0)
        }
    }

    /// Every screen some model reported.
    public var screens: [ScreenSize] { Array(candidatesByScreen.keys) }

    /// The screen a model reported most often (ties: the smaller size), or nil.
    public func primaryScreen(of model: String) -> ScreenSize? {
        countsByModel[model]?.max { a, b in (a.value, b.key) < (b.value, a.key) }?.key
    }
}

/// Key of the `model_screens` table.
public struct ModelScreenKey: Hashable, Sendable {
    public var model: String
    public var screen: ScreenSize

    public init(model: String, screen: ScreenSize) {
        self.model = model
        self.screen = screen
    }
}
