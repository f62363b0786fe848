import Hummingbird

/// Every route kbtd serves and its methods, as `KBTDApp` registers them and
/// openapi.yaml documents them (`DashboardRouteTests` checks each entry
/// against the router: 405 with `Allow` for the others).
enum KBTDRoutes {
    /// HEAD is answered wherever GET is (the router generates it).
    static let methods: [String: [HTTPRequest.Method]] = [
        "/v1/batches": [.post],
        "/v1/height": [.get, .head],
        "/v1/heights": [.get, .head],
        "/v1/stats": [.get, .head],
        "/healthz": [.get, .head],
        "/readyz": [.get, .head],
        "/metrics": [.get, .head],
        "/dashboard": [.get, .head],
    ]
}
