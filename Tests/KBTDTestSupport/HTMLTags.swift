import Foundation

/// The attributes of every start tag in `html` that begins with `prefix`
/// (e.g. `<rect class="bar"`), in document order. Enough for the dashboard's
/// own markup and Chromium's serialization of it: attribute values are double
/// quoted and never contain `>`.
package func htmlTags(_ html: String, _ prefix: String) -> [[String: String]] {
    var result: [[String: String]] = []
    var rest = html[...]
    while let start = rest.range(of: prefix) {
        guard let end = rest[start.lowerBound...].firstIndex(of: ">") else { break }
        result.append(htmlAttributes(String(rest[start.lowerBound..<end])))
        rest = rest[end...]
    }
    return result
}

/// `name="value"` pairs of one start tag, entities decoded.
package func htmlAttributes(_ tag: String) -> [String: String] {
    var attributes: [String: String] = [:]
    var rest = tag[...]
    while let equals = rest.range(of: "=\"") {
        let name = rest[..<equals.lowerBound].split(whereSeparator: { $0 == " " || $0 == "\n" }).last.map(String.init) ?? ""
        let valueStart = equals.upperBound
        guard let close = rest[valueStart...].firstIndex(of: "\"") else { break }
        attributes[name] = String(rest[valueStart..<close])
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
        rest = rest[rest.index(after: close)...]
    }
    return attributes
}

/// The pieces of `html` that start at each `prefix` and run to the next one (or the end).
package func htmlSections(_ html: String, _ prefix: String) -> [String] {
    html.components(separatedBy: prefix).dropFirst().map { prefix + $0 }
}
