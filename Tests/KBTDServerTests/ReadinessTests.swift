import Foundation
import Testing

/// `/readyz` apart from `/healthz`: ready while the app serves, 503 with the reason once it shuts
/// down (the daemon's SIGTERM path is in SystemdTests; a store that cannot write, in CrashConsistencyTests).
@Suite("readiness")
struct ReadinessTests {
    @Test func readyWhileServingAndNotOnceShuttingDown() async throws {
        let daemon = try InProcessApp()
        let ready = try await daemon.get("/readyz")
        #expect(ready.status == 200)
        #expect(ready.text == #"{"status":"ready"}"#)
        #expect(ready.header("content-type") == "application/json")
        #expect(try await daemon.request(.head, "/readyz").status == 200)
        #expect(try await daemon.request(.post, "/readyz").status == 405)

        await daemon.app.shutdown()
        let stopping = try await daemon.get("/readyz")
        #expect(stopping.status == 503)
        #expect(stopping.json?["error"] == .string("shutting down"), "\(stopping.text)")
        #expect(stopping.header("retry-after") == "1")
    }
}
