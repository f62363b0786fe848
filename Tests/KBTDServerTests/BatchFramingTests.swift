@testable import KBTDServer
import Testing

/// How a batch's headers are read (`BatchBody.Framing`), on every path alike.
@Suite("Batch framing")
struct BatchFramingTests {
    /// The `Content-Type` check reads an ASCII value as bytes (no Foundation bridging a batch) and
    /// must accept exactly what the Foundation reading it replaced accepts, quirks included: `split`
    /// drops an empty first piece, `.whitespaces` trims Unicode spaces such as U+00A0.
    @Test func contentTypeIsReadAsFoundationReadsIt() {
        let values = ["application/json", "APPLICATION/Json", " application/json ", "\tapplication/json\t",
                      "application/json; charset=utf-8", "application/json ;x", ";application/json", ";;application/json",
                      "application/json;", "application/jsonx", "application/jso", "xapplication/json", "", " ", ";", " ;",
                      "text/plain", "application/json\u{A0}", "\u{A0}application/json", "application/json\u{0B}",
                      "application/ json", "application/json\u{7F}", "Application/JSON\t; q=1"]
        for value in values {
            let foundation = (value.split(separator: ";", maxSplits: 1).first.map {
                $0.trimmingCharacters(in: .whitespaces).lowercased()
            } ?? "") == "application/json"
            #expect(BatchBody.Framing.isJSON(value) == foundation, "Content-Type \(value.debugDescription)")
        }
        #expect(BatchBody.Framing.isJSON(" Application/JSON ; charset=utf-8"))
        #expect(!BatchBody.Framing.isJSON("text/json"))
    }
}
