import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Debian's nginx (nginx-light, plus libnginx-mod-stream for the PROXY
/// protocol) in front of a test daemon, on free loopback ports, with the
/// same proxy lines the README's recipe gives.
package final class TestNginx {
    package static let binary = "/usr/sbin/nginx"
    package static let streamModule = "/usr/lib/nginx/modules/ngx_stream_module.so"
    package static let installed = FileManager.default.isExecutableFile(atPath: binary)
        && FileManager.default.fileExists(atPath: streamModule)
    /// The skip message names what is missing: nginx itself, or only its stream module.
    package static var missing: String {
        let what = FileManager.default.isExecutableFile(atPath: binary)
            ? "nginx's stream module (\(streamModule)) is not installed: `apt-get install libnginx-mod-stream`"
            : "nginx is not installed: `apt-get install nginx-light libnginx-mod-stream`"
        return what + " (scripts/dev deps and .ci/run install it)"
    }

    package let directory: URL
    /// HTTP reverse proxy to kbtd's plain port, adding X-Forwarded-For.
    package let httpPort: Int
    /// TCP proxy to kbtd's `proxy_protocol` listener, sending a PROXY v1 header.
    package let streamPort: Int
    /// With `tls`: nginx terminating TLS (HTTP/2 offered), then as `httpPort`.
    package let httpsPort: Int?
    private let process: SpawnedProcess

    /// Starts nginx on ports the kernel chose (ToolPorts: a start that finds one taken is retried whole).
    package convenience init(directory: URL, upstream: Int, proxyProtocolUpstream: Int, tls: TestCertificates? = nil) throws {
        let (ports, process) = try ToolPorts.start(tls == nil ? 2 : 3, "nginx") { ports in
            (ports, try Self.launch(directory: directory, ports: ports, upstream: upstream, proxyProtocolUpstream: proxyProtocolUpstream, tls: tls))
        }
        self.init(directory: directory, ports: ports, process: process)
    }

    private init(directory: URL, ports: [Int], process: SpawnedProcess) {
        self.directory = directory
        httpPort = ports[0]
        streamPort = ports[1]
        httpsPort = ports.count > 2 ? ports[2] : nil
        self.process = process
    }

    /// Writes the configuration and runs nginx; returns once it listens on every port. nginx writes
    /// its pid file after it has opened every listening socket: that file is the readiness event.
    private static func launch(directory: URL, ports: [Int], upstream: Int, proxyProtocolUpstream: Int,
                               tls: TestCertificates?) throws -> SpawnedProcess {
        let (httpPort, streamPort) = (ports[0], ports[1])
        let httpsPort: Int? = ports.count > 2 ? ports[2] : nil
        let path = directory.path
        let location = """
                    location / {
                        proxy_pass http://127.0.0.1:\(upstream);
                        proxy_http_version 1.1;
                        proxy_set_header Connection "";
                        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
                    }
            """
        var httpsServer = ""
        if let tls, let httpsPort {
            httpsServer = """
                server {
                    listen 127.0.0.1:\(httpsPort) ssl http2;
                    ssl_certificate \(tls.chain);
                    ssl_certificate_key \(tls.key);
                \(location)
                }
            """
        }
        for folder in ["body", "proxy", "fastcgi", "uwsgi", "scgi"] {
            try FileManager.default.createDirectory(at: directory.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        let config = """
            load_module \(Self.streamModule);
            daemon off;
            master_process off;
            worker_processes 1;
            pid \(path)/nginx.pid;
            error_log \(path)/error.log info;
            events { worker_connections 256; }
            http {
                access_log \(path)/access.log;
                client_body_temp_path \(path)/body;
                proxy_temp_path \(path)/proxy;
                fastcgi_temp_path \(path)/fastcgi;
                uwsgi_temp_path \(path)/uwsgi;
                scgi_temp_path \(path)/scgi;
                server {
                    listen 127.0.0.1:\(httpPort);
            \(location)
                }
            \(httpsServer)
            }
            stream {
                server {
                    listen 127.0.0.1:\(streamPort);
                    proxy_pass 127.0.0.1:\(proxyProtocolUpstream);
                    proxy_protocol on;
                }
            }
            """
        let configPath = directory.appendingPathComponent("nginx.conf").path
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        let pidFile = path + "/nginx.pid"
        try? FileManager.default.removeItem(atPath: pidFile)
        let process = try SpawnedProcess(Self.binary, ["-p", path, "-e", path + "/error.log", "-c", configPath])
        let errors = { (try? String(contentsOfFile: path + "/error.log", encoding: .utf8)) ?? "" }
        do {
            try waitForChange(of: path, "nginx's pid file (written once it listens)", seconds: 60, stop: process.exited, detail: errors) {
                FileManager.default.fileExists(atPath: pidFile)
            }
        } catch {
            process.terminate()
            if ToolPorts.saysAddressInUse(errors()) { throw PortTaken(description: errors()) }
            throw HTTPTestError(description: "nginx did not start: \(error)")
        }
        return process
    }

    /// nginx runs until the test is done with it (SpawnedProcess stops it when released).
    package func stop() {
        process.terminate()
    }
}
