import Hummingbird
import HummingbirdCore
import KBTDCore

/// `GET /v1/height` and `GET /v1/heights`: answered from the in-memory index,
/// with `Cache-Control` and a strong `ETag` (304 on `If-None-Match`).
struct HeightRoutes: Sendable {
    let heights: LiveHeights
    let settings: SettingsBox
    let metrics: ServerMetrics

    func height(_ request: Request, context: KBTDRequestContext) -> Response {
        let parameters = request.uri.queryParameters
        do {
            let query = try HeightQuery(parameters: { parameters[Substring($0)].map(String.init) })
            let answer = heights.height(query)
            if let basis = answer.basis { metrics.heightAnswer(basis: basis) }
            return cached(answer, request: request)
        } catch {
            return JSONResponse.invalid(error, "invalid query")
        }
    }

    func allHeights(_ request: Request, context: KBTDRequestContext) -> Response {
        let parameters = request.uri.queryParameters
        do throws(FieldError) {
            let model = try HeightQuery.model(parameters["model"].map(String.init))
            let os = parameters["os"].map(String.init)
            if let os { _ = try HeightQuery.osMajor(os) }
            var screen: ScreenSize?
            if let text = parameters["screen"].map(String.init) { screen = try HeightQuery.screen(text) }
            let answer = heights.heights(model: model, os: os, screen: screen)
            metrics.heightEstimates(answer.bases)
            return cached(answer, request: request)
        } catch {
            return JSONResponse.invalid(error, "invalid query")
        }
    }

    private func cached(_ answer: CachedAnswer, request: Request) -> Response {
        let headers: HTTPFields = [
            .cacheControl: "public, max-age=\(settings.current.cacheMaxAge)",
            .eTag: answer.etag,
        ]
        if let match = request.headers[.ifNoneMatch],
           match == "*" || match.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == answer.etag }) {
            return Response(status: .notModified, headers: headers)
        }
        return JSONResponse.bytes(.ok, answer.body, headers: headers)
    }
}
