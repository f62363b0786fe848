import Foundation

/// SplitMix64: a small, fast, seedable generator. Simulated fleets, benchmark
/// workloads and tests use it instead of the system generator so the same seed
/// always gives the same data.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    /// An independent stream for item `index` of a seeded run, so device `i`
    /// is the same whatever order devices are simulated in.
    public init(seed: UInt64, stream index: UInt64) {
        var mixer = SplitMix64(seed: seed ^ (index &* 0xD1B5_4A32_D192_ED03))
        state = mixer.next()
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in 0..<1.
    public mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }

    /// True with probability `p`.
    public mutating func chance(_ p: Double) -> Bool { unit() < p }

    /// Uniform in `range`.
    public mutating func uniform(_ range: ClosedRange<Double>) -> Double {
        range.lowerBound + (range.upperBound - range.lowerBound) * unit()
    }

    /// Uniform integer in `range`.
    public mutating func integer(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(next() % UInt64(range.upperBound - range.lowerBound + 1))
    }

    /// One of `weighted`'s values, with probability proportional to its weight.
    public mutating func pick<T>(_ weighted: [(T, Double)]) -> T {
        let total = weighted.reduce(0) { $0 + $1.1 }
        var roll = unit() * total
        for (value, weight) in weighted {
            roll -= weight
            if roll < 0 { return value }
        }
        return weighted[weighted.count - 1].0
    }

    /// A log-normal draw with the given median and shape (Box-Muller).
    public mutating func logNormal(median: Double, sigma: Double) -> Double {
        let u1 = max(unit(), 1e-12), u2 = unit()
        let normal = (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
        return median * exp(sigma * normal)
    }
}
