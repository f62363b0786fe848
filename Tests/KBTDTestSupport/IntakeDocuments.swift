import KBTDCore

/// Batch documents for the intake's tests: the differential oracle (KBTDCoreTests/IntakeOracleTests)
/// and the counting intake (KBTDServerTests/CountedIntakeTests) judge the same ones.
package enum IntakeDocuments {
    package static let now = 1_763_719_198.0
    package static let rules = FieldRules(maxSamples: 10_000)

    package static let uuid = "0F8FAD5B-D9CB-469F-A165-70867728950E"
    package static let device = #"{"model":"iPhone17,1","os":"26.1","app":"com.example.chat","app_version":"3.2.0","screen":"393x852"}"#

    package static func sample(_ extra: String = "", t: String = "1763719198", height: String = "336") -> String {
        #"{"t":\#(t),"event":"show","language":"en-US","orientation":"portrait","height":\#(height),"duration":0.25,"curve":7\#(extra)}"#
    }

    package static func batch(samples: String, device: String = device, id: String = "\"\(uuid)\"", extra: String = "") -> String {
        #"{"batch_id":\#(id),"device":\#(device),"samples":[\#(samples)]\#(extra)}"#
    }

    /// Documents where a single pass could easily part from the tree: key
    /// order, duplicates (also through escapes), nulls, wrong types, depth,
    /// trailing bytes, escapes, invalid UTF-8, numbers at the edges of the fast path.
    package static let tricky: [String] = {
        var documents = [
            "", " ", "{", "}", "[]", "null", "42", "\"x\"", "{}", "{} x", "{}  \n", "{\"a\":1,}", "{\"a\" 1}", "{1:2}",
            batch(samples: sample()),
            batch(samples: sample()) + " {}",
            // Keys in another order: batch-level checks still run batch_id, device, samples.
            #"{"samples":[],"device":{"os":"26.1"},"batch_id":7}"#,
            #"{"samples":"x","device":{"model":"iPhone17,1","os":"26.1"},"batch_id":"\#(uuid)"}"#,
            #"{"samples":[1,{"curve":99,"t":"x"}],"device":null,"batch_id":"\#(uuid)"}"#,
            #"{"device":{"os":"26.1","model":"a b"},"samples":[1],"batch_id":"\#(uuid)"}"#,
            batch(samples: sample(), id: "null"), batch(samples: sample(), id: "\"nope\""), batch(samples: sample(), id: "[]"),
            batch(samples: sample(), device: "[]"), batch(samples: sample(), device: "null"), batch(samples: sample(), device: "{}"),
            batch(samples: sample(), device: #"{"model":null,"os":"26.1"}"#),
            batch(samples: sample(), device: #"{"model":"iPhone17,1","os":26}"#),
            batch(samples: sample(), device: #"{"model":"iPhone17,1","os":"26.1","app":5}"#),
            batch(samples: sample(), device: #"{"model":"iPhone17,1","os":"26.1","screen":"0x852"}"#),
            batch(samples: sample(), device: #"{"model":"iPhone17,1","os":"26.1","app":"\#(String(repeating: "é", count: 129))"}"#),
            batch(samples: ""), batch(samples: "null"), batch(samples: "[]"), batch(samples: "\"s\""),
            // Duplicates, also spelled with escapes; a duplicate inside an ignored member.
            batch(samples: sample(), extra: #","batch_id":"\#(uuid)""#),
            batch(samples: sample(), extra: #","b\u0061tch_id":1"#),
            batch(samples: sample(#","t":1"#)),
            batch(samples: sample(#","\u0074":1"#)),
            batch(samples: sample(#","x":1,"x":2"#)),
            batch(samples: sample(#","x":{"a":[{"b":1,"b":2}]}"#)),
            batch(samples: sample(), extra: #","extra":{"k":1,"\u006b":2}"#),
            batch(samples: sample(), device: #"{"model":"iPhone17,1","os":"26.1","os":"26.2"}"#),
            batch(samples: sample(#","é":1,"e\u0301":2"#)),
            batch(samples: sample(#","\u212a":1,"K":2"#)),
            // Nulls and wrong types in each sample field, in and out of the validator's order.
            batch(samples: [sample(#","keyboard_type":null,"preloaded":null,"floating":null"#),
                            sample(#","keyboard_type":"numberPad","hardware_keyboard":true"#, height: "0"),
                            sample(#","keyboard_type":"bogus""#), sample(#","keyboard_type":7"#),
                            sample(#","floating":"yes""#), sample(#","accessory_height":400"#),
                            sample(#","safe_area_bottom":-1"#), sample(#","cold_start_ms":0"#),
                            sample(#","cold_start_ms":60000.5"#), sample(#","cold_start_ms":null"#),
                            sample(#","cold_start_ms":"5""#), sample(t: "null"), sample(t: "\"1\""), sample(t: "1"),
                            sample(t: "1863719198"), sample(height: "0"), sample(height: "2000.0000001"), sample(height: "[]"),
                            "[]", "\"s\"", "null", "true", "{}",
                            #"{"curve":1.5,"t":1763719198,"event":"show","language":"en-US","orientation":"portrait","height":1,"duration":0}"#,
                            #"{"t":1763719198,"event":"Show","language":"en-US","orientation":"portrait","height":1,"duration":0,"curve":0}"#,
                            #"{"t":1763719198,"event":"hide","language":"","orientation":"portrait","height":0,"duration":0,"curve":0}"#,
                            #"{"t":1763719198,"event":"hide","language":"de\u002dDE","orientation":"landscape","height":0,"duration":5,"curve":15}"#,
                            #"{"t":1763719198,"event":"change","language":"a b","orientation":"up","height":1,"duration":0,"curve":0}"#,
                            #"{"t":1763719198,"event":"change","language":"ja-JP","orientation":"up","height":1,"duration":0,"curve":0}"#,
                            #"{"t":1763719198,"event":"ch\u0061nge","language":"ja-JP","orientation":"portrait","height":1,"duration":0,"curve":0}"#,
                           ].joined(separator: ",")),
            // Syntax errors after a validation fault: the syntax error wins.
            batch(samples: sample(), id: "1") + "x",
            batch(samples: "1,{\"a\":tru}"), batch(samples: "{\"a\":\"\\x\"}"), batch(samples: "{\"a\":\"\\ud800\"}"),
            batch(samples: "{\"a\":\"\\udc00\"}"), batch(samples: "{\"a\":\"\\u12\"}"), batch(samples: "{\"a\":\"\u{01}\"}"),
            batch(samples: "{\"a\":01}"), batch(samples: "{\"a\":1.}"), batch(samples: "{\"a\":-}"), batch(samples: "{\"a\":1e}"),
            batch(samples: "{\"a\":1e400}"), batch(samples: "{\"a\":\(String(repeating: "1", count: 65))}"),
            "{\"a\":\"", "{\"a\":\"\\", "{\"a\":[1,2", "{\"a\":[1 2]}", "{\"a\":{\"b\"}}", "{\"a\":nul}",
            String(repeating: "[", count: 40) + String(repeating: "]", count: 40),
            "{\"samples\":" + String(repeating: "[", count: 31) + String(repeating: "]", count: 31) + "}",
            "{\"samples\":" + String(repeating: "[", count: 32) + String(repeating: "]", count: 32) + "}",
            "{\"samples\":[" + String(repeating: "{\"a\":", count: 30) + "1" + String(repeating: "}", count: 30) + "]}",
            "{\"samples\":[" + String(repeating: "{\"a\":", count: 31) + "1" + String(repeating: "}", count: 31) + "]}",
            "{\"device\":" + String(repeating: "{\"a\":", count: 31) + "1" + String(repeating: "}", count: 31) + "}",
            // Too many samples (the cap here is 10,000).
            batch(samples: Array(repeating: "1", count: 10_001).joined(separator: ",")),
            batch(samples: Array(repeating: sample(), count: 10_000).joined(separator: ",")),
        ]
        // Numbers: exact fast-path cases and every fallback, in fields that land in a sample.
        let literals = [
            "336", "336.0", "336.5", "3.365e2", "33650e-2", "0.336e3", "1e3", "2e3", "1999.9999999999999", "1999.99999999999999999",
            "0.1", "0.30000000000000004", "123.456789012345", "123.4567890123456", "1234567890123456e-13",
            "9007199254740993e-13", "5e-324", "0e10", "0.0000000000000000000001e25", "4.9406564584124654e-324",
            "1.7976931348623157e308", "-0", "-0.0", "0", "100000000000000000000000e-21", "1E2", "1e+2", "10E-1",
        ]
        for literal in literals {
            documents.append(batch(samples: sample(height: literal)))
            documents.append(batch(samples: sample(#","accessory_height":\#(literal),"safe_area_bottom":\#(literal)"#, height: "2000")))
            documents.append(batch(samples: sample(#","cold_start_ms":\#(literal)"#)))
        }
        for t in ["1763719198.123456", "1763719198.1234567", "1.763719198e9", "1763719198123456e-6", "17637191981234567e-7"] {
            documents.append(batch(samples: sample(t: t)))
        }
        // scanSample guesses each key from the previous sample's order: keys
        // that break the pattern, spell a field with an escape, repeat, or end the input mid-key.
        // (A duplicate key ends the parse, so each duplicate gets its own document.)
        documents.append(batch(samples: [sample(), #"{"event":"show","t":1}"#, #"{"t ":1,"tt":2,"\u0074":3}"#, sample(),
                                         sample().replacingOccurrences(of: #"{"t""#, with: #"{"\u0074""#), sample()].joined(separator: ",")))
        for second in [sample(#","\u0074":1"#), #"{"t":1,"t":2}"#, #"{"ev\u0065nt":"hide","event":"show"}"#, #"{"tt":1,"t":2,"t":3}"#] {
            documents.append(batch(samples: sample() + "," + second))
        }
        let two = batch(samples: sample(#","x":1"#) + "," + sample(#","x":1"#))
        for cut in stride(from: two.utf8.count / 2, to: two.utf8.count, by: 1) {
            documents.append(String(decoding: Array(two.utf8.prefix(cut)), as: UTF8.self))
        }
        return documents
    }()
}
