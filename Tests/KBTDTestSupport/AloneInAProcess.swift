import Foundation
import Testing

/// A test that needs the whole process to itself: it holds every thread of Swift's cooperative
/// pool, which the suite's other tests, run in parallel, use too. In the suite's process such a
/// test waits for pool threads the other tests hold (and, once it holds them, starves those tests);
/// so it runs again in a test process of its own (the same test binary, `--filter` naming it alone),
/// where nothing else runs, and the suite's process only waits for that process (on a thread of its own).
///
///     @Test(.ownThreads) func holdsThePool() async throws {
///         guard AloneInAProcess.isThisProcess(for: "holdsThePool") else {
///             try await AloneInAProcess.run("holdsThePool")
///             return
///         }
///         ... the test itself ...
///     }
package enum AloneInAProcess {
    static let variable = "KBTD_TEST_ALONE"

    /// True in the process `run(name)` started for the test `name`.
    package static func isThisProcess(for name: String) -> Bool {
        ProcessInfo.processInfo.environment[variable] == name
    }

    /// Runs the test function `name` alone in a new test process (killed after `timeout` seconds) and
    /// records an issue, with that process's status and output, unless it ran exactly that one test
    /// and the test passed (a filter that matched nothing fails too).
    package static func run(_ name: String, timeout: Double = 300,
                            sourceLocation: SourceLocation = #_sourceLocation) async throws {
        var environment = ProcessInfo.processInfo.environment
        environment[variable] = name
        // The Swift Testing runner of this test binary (`swift test` starts it the same way).
        let result = try await runProgram(CommandLine.arguments[0], ["--testing-library", "swift-testing", "--filter", "\(name)\\("],
                                          environment: environment, timeout: timeout)
        // Swift Testing reports on standard error when it is not a terminal.
        let report = result.stdout + result.stderr
        if result.status != 0 || !report.contains("Test run with 1 test in 1 suite passed after") {
            Issue.record("\(name) alone in a process of its own: exit \(result.status)\n\(report)", sourceLocation: sourceLocation)
        }
    }
}
