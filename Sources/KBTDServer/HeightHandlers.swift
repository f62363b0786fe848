import Hummingbird
import HummingbirdCore
import KBTDCore

/// `GET /v1/height` and `GET /v1/heights`: answered from the in-memory index,
/// with `Cache-Control` and a strong `ETag` (304 on `If-None-Match`).
public struct HeightHandlers: Sendable {
    let heights: HeightService
    let settings: SettingsBox
    let metrics: ServerMetrics

    func height(_ request: Request, context: KBTDRequestContext) -> Response {
        let response: Response
        let parameters = request.uri.queryParameters
        switch HeightHandlers.query({ parameters[Substring($0)].map(String.init) }) {
        case .success(let query):
            let answer = heights.height(query)
            if let basis = answer.basis { metrics.heightAnswer(basis: basis) }
            response = cached(answer, request: request)
        case .failure(let error): response = JSONResponse.error(.badRequest, "invalid query", detail: error.description, field: error.field)
        }
        return response
    }

    func allHeights(_ request: Request, context: KBTDRequestContext) -> Response {
        let parameters = request.uri.queryParameters
        let response: Response
        if let fault = HeightHandlers.validateModel(parameters["model"].map(String.init)) {
            response = JSONResponse.error(.badRequest, "invalid query", detail: fault.description, field: fault.field)
        } else if let os = parameters["os"].map(String.init), BatchValidator.osMajor(os) == nil {
            response = JSONResponse.error(.badRequest, "invalid query", detail: "os: must be a dotted version like 26.1", field: "os")
        } else if let screen = parameters["screen"].map(String.init), let problem = ScreenSize.problem(screen) {
            response = JSONResponse.error(.badRequest, "invalid query", detail: "screen: \(problem)", field: "screen")
        } else {
            let answer = heights.heights(model: String(parameters["model"]!), os: parameters["os"].map(String.init),
                                         screen: parameters["screen"].flatMap { ScreenSize(String($0)) })
            metrics.heightEstimates(answer.bases)
            response = cached(answer, request: request)
        }
        return response
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

    static func validateModel(_ model: String?) -> BatchError? {
        guard let model, !model.isEmpty else { return BatchError(field: "model", reason: "is required") }
        return BatchValidator.modelProblem(model).map { BatchError(field: "model", reason: $0) }
    }

    /// Parses and checks a height question (the same rules as ingest); `parameter` looks up a query parameter by name.
    public static func query(_ parameter: (String) -> String?) -> Result<HeightQuery, BatchError> {
        if let fault = validateModel(parameter("model")) { return .failure(fault) }
        guard let language = parameter("language"), !language.isEmpty else {
            return .failure(BatchError(field: "language", reason: "is required"))
        }
        if let problem = BatchValidator.languageProblem(language) {
            return .failure(BatchError(field: "language", reason: problem))
        }
        var osMajor: Int?
        if let os = parameter("os") {
            guard let major = BatchValidator.osMajor(os) else {
                return .failure(BatchError(field: "os", reason: "must be a dotted version like 26.1"))
            }
            osMajor = major
        }
        var orientation = Orientation.portrait
        if let value = parameter("orientation") {
            guard let parsed = Orientation(rawValue: value) else {
                return .failure(BatchError(field: "orientation", reason: "must be portrait or landscape"))
            }
            orientation = parsed
        }
        let keyboardType = parameter("keyboard_type") ?? "default"
        guard KeyboardTypes.all.contains(keyboardType) else {
            return .failure(BatchError(field: "keyboard_type", reason: "must be a UIKeyboardType name such as default or numberPad"))
        }
        var screen: ScreenSize?
        if let value = parameter("screen") {
            if let problem = ScreenSize.problem(value) { return .failure(BatchError(field: "screen", reason: problem)) }
            screen = ScreenSize(value)
        }
        return .success(HeightQuery(model: parameter("model")!, language: language, osMajor: osMajor,
                                    orientation: orientation, keyboardType: keyboardType, screen: screen))
    }
}
