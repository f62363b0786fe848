#if canImport(SwiftUI) && canImport(UIKit) && os(iOS)
import SwiftUI
import UIKit

// The SwiftUI seam: the client's lifecycle from the scene phase. iOS only: kbtd's CI
// (Linux) does not compile this file.

@available(iOS 14.0, *)
@available(iOSApplicationExtension, unavailable)
extension View {
    /// Starts the client when the scene is active (sending what is queued, refreshing heights when
    /// due) and sends its batches within a background task when the scene moves to the background.
    ///
    /// ```swift
    /// WindowGroup { ChatView().keyboardTelemetry(telemetry) }
    /// ```
    public func keyboardTelemetry(_ client: KeyboardTelemetryClient) -> some View {
        modifier(KeyboardTelemetryLifecycle(client: client))
    }
}

@available(iOS 14.0, *)
@available(iOSApplicationExtension, unavailable)
private struct KeyboardTelemetryLifecycle: ViewModifier {
    let client: KeyboardTelemetryClient
    @Environment(\.scenePhase) private var scenePhase

    func body(content: Content) -> some View {
        content
            .onAppear { client.start() }
            .onChange(of: scenePhase) { phase in
                switch phase {
                case .active: client.start()
                case .background: client.sendInBackground(application: UIApplication.shared)
                default: break
                }
            }
    }
}
#endif
