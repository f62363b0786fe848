import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The networks the client's requests may use. Telemetry is never urgent: by default nothing is sent
/// in Low Data Mode or over an expensive network (cellular, a personal hotspot), and a request made
/// offline waits for a usable network instead of failing. `URLSessionTransport` applies it on Apple
/// platforms; swift-corelibs-foundation (Linux) has none of these settings and ignores the policy.
public struct NetworkPolicy: Sendable, Equatable {
    /// `URLSessionConfiguration.allowsConstrainedNetworkAccess` (Low Data Mode).
    public var allowsConstrainedNetworkAccess = false
    /// `URLSessionConfiguration.allowsExpensiveNetworkAccess` (cellular, hotspots).
    public var allowsExpensiveNetworkAccess = false
    /// `URLSessionConfiguration.waitsForConnectivity`: a request waits (up to `maxConnectivityWait`)
    /// for a network the rules above allow, instead of failing at once and backing off.
    public var waitsForConnectivity = true
    /// How long a request may wait for connectivity, seconds (`timeoutIntervalForResource`).
    public var maxConnectivityWait: TimeInterval = 24 * 3600

    /// The defaults an app should ship: no Low Data Mode, no expensive networks, wait for connectivity.
    public init() {}

    /// Applies the policy to a session configuration (Apple platforms; elsewhere a no-op).
    public func apply(to configuration: URLSessionConfiguration) {
        #if canImport(Darwin)
        configuration.allowsConstrainedNetworkAccess = allowsConstrainedNetworkAccess
        configuration.allowsExpensiveNetworkAccess = allowsExpensiveNetworkAccess
        configuration.waitsForConnectivity = waitsForConnectivity
        configuration.timeoutIntervalForResource = maxConnectivityWait
        #endif
    }
}
