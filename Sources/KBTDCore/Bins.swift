import Foundation

/// Heights are stored in 0.5 pt bins: iOS reports points that are multiples of
/// 1/3 or 1/2 on some scales, and half a point is below what a layout can see,
/// so finer bins would only split one real height over several keys.
public enum HeightBin {
    /// The bin (in half points) a height in points falls into.
    public static func halfPoints(_ points: Double) -> Int {
        Int((points * 2).rounded())
    }

    /// The bin's height in points.
    public static func points(_ halfPoints: Int) -> Double {
        Double(halfPoints) / 2
    }
}

/// Animation timing is kept by (duration in whole milliseconds, curve).
public struct AnimationBin: Hashable, Sendable {
    public var durationMs: Int
    public var curve: Int

    public init(durationMs: Int, curve: Int) {
        self.durationMs = durationMs
        self.curve = curve
    }

    public init(duration: Double, curve: Int) {
        self.init(durationMs: Int((duration * 1000).rounded()), curve: curve)
    }
}

/// DDSketch-style logarithmic buckets: bucket `i` holds values in
/// (γ^(i-1), γ^i] with γ = (1+α)/(1-α); answering with 2γ^i/(γ+1) keeps the
/// relative error of any percentile within α = 1%, and counts merge by addition.
public enum LogBucket {
    public static let relativeAccuracy = 0.01
    public static let gamma = (1 + relativeAccuracy) / (1 - relativeAccuracy)
    static let logGamma = _log(gamma)

    /// The bucket index of a positive value.
    public static func index(_ value: Double) -> Int {
        Int((_log(value) / logGamma).rounded(.up))
    }

    /// The value that represents bucket `index`.
    public static func value(_ index: Int) -> Double {
        2 * _pow(gamma, Double(index)) / (gamma + 1)
    }
}

@inline(__always) func _log(_ x: Double) -> Double { Foundation.log(x) }
@inline(__always) func _pow(_ x: Double, _ y: Double) -> Double { Foundation.pow(x, y) }
