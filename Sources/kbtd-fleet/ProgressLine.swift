import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A one-line progress report, redrawn in place twice a second, only when
/// standard output is a terminal (never in pipes, logs or tests).
struct ProgressLine {
    static var isTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

    /// Redraws until cancelled.
    static func run(total: Int, started: Date, read: @escaping @Sendable () -> FleetRunner.FleetProgress) -> Task<Void, Never>? {
        guard isTerminal else { return nil }
        return Task.detached {
            while !Task.isCancelled {
                let progress = read()
                let elapsed = Date().timeIntervalSince(started)
                let rate = elapsed > 0 ? Double(progress.batches) / elapsed : 0
                let line = "devices \(progress.devicesDone)/\(total)  acknowledged \(progress.samples) samples in "
                    + "\(progress.batches) batches  \(String(format: "%.0f", rate)) batches/s  \(String(format: "%.0f", elapsed)) s"
                FileHandle.standardOutput.write(Data(("\r\u{1B}[K" + line).utf8))
                try? await Task.sleep(nanoseconds: 500_000_000)
            }
        }
    }

    /// Clears the line before the summary.
    static func clear() {
        if isTerminal { FileHandle.standardOutput.write(Data("\r\u{1B}[K".utf8)) }
    }
}
