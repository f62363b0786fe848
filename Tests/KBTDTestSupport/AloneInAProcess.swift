import Foundation

/// A test that needs the whole process to itself: it holds every thread of Swift's cooperative
/// pool, which the suite's other tests, run in parallel, use too. In the suite's process such a
/// test waits for pool threads the other tests hold (and, once it holds them, starves those tests);
/// so it runs again in a test process of its own (the same test binary, `--filter` naming it alone),
/// where nothing else runs, and the suite's process only waits for that process (on a thread of its own).
///
///     @Test(.ownThreads) func holdsThePool() async throws {
///         guard AloneInAProcess.isThisProcess(for: "holdsThePool") else {
///             try await AloneInAProcess.run("holdsThePool"); return
///         }
///         ... the test itself ...
///     }
package enum AloneInAProcess {
    static let variable = "KBTD_TEST_ALONE"

    /// True in the process `run(name)` started for the test `name`.
    package static func isThisProcess(for name: String) -> Bool {
        ProcessInfo.processInfo.environment[variable] == name
    }

    /// Runs the test function `name` alone in a new test process (killed after `timeout` seconds);
    /// `passedOneTest` tells whether it ran exactly that test and it passed.
    package static func run(_ name: String, timeout: Double = 300) async throws -> CommandResult {
        var environment = ProcessInfo.processInfo.environment
        environment[variable] = name
        // The Swift Testing runner of this test binary (`swift test` starts it the same way).
        return try await runProgram(CommandLine.arguments[0], ["--testing-library", "swift-testing", "--filter", "\(name)\\("],
                                    environment: environment, timeout: timeout)
    }

    /// Whether `result` is a run of exactly one test that passed.
    package static func passedOneTest(_ result: CommandResult) -> Bool {
        // Swift Testing reports on standard error when it is not a terminal.
        let report = result.stdout + result.stderr
        return result.status == 0 && report.contains("Test run with 1 test in 1 suite passed after")
    }
}
