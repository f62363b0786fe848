import Foundation

/// A curl config file (`curl -K`) of gzip batch uploads over h2, one transfer per upload
/// (`next` between them): what the HTTP/2 ingest and upload tests hand to `curl --parallel`.
enum CurlUploads {
    /// Writes the config to `path`: each upload POSTs `file` to `url` (trusting `ca`), its body to
    /// `output`, and prints `writeOut` (curl's `--write-out` format) once done.
    static func writeConfig(to path: String, url: String, ca: String,
                            uploads: [(file: String, output: String)], writeOut: String) throws {
        let blocks = uploads.map { upload in
            """
            url = "\(url)"
            http2
            cacert = "\(ca)"
            request = "POST"
            header = "Content-Type: application/json"
            header = "Content-Encoding: gzip"
            data-binary = "@\(upload.file)"
            output = "\(upload.output)"
            write-out = "\(writeOut)\\n"

            """
        }
        try blocks.joined(separator: "next\n").write(toFile: path, atomically: true, encoding: .utf8)
    }
}
