@testable import KBTDCore
import Testing

/// `SeriesKey` carries its fields' hash: equal keys hash alike however they were made, a changed
/// field changes the hash with it, and keys differing in any one field are different.
@Suite("SeriesKey: the hash it carries")
struct SeriesKeyTests {
    static func key(model: String = "iPhone17,1", osMajor: Int = 26, language: String = "en-US",
                    orientation: Orientation = .portrait, keyboardType: String = "default") -> SeriesKey {
        SeriesKey(model: model, osMajor: osMajor, language: language, orientation: orientation, keyboardType: keyboardType)
    }

    @Test func equalKeysMadeApartAreEqualAndHashAlike() {
        // Strings built at run time (other storage) against literals.
        let a = Self.key(model: ["iPhone17", "1"].joined(separator: ","), language: String("en-US".reversed().reversed()))
        let b = Self.key()
        #expect(a == b && a.hashValue == b.hashValue)
        #expect(Set([a, b]).count == 1)
        #expect([a: 1][b] == 1)
    }

    @Test func eachFieldTellsKeysApart() {
        let base = Self.key()
        let others = [Self.key(model: "iPhone16,2"), Self.key(osMajor: 18), Self.key(language: "ja-JP"),
                      Self.key(orientation: .landscape), Self.key(keyboardType: "numberPad")]
        for other in others {
            #expect(other != base)
        }
        #expect(Set(others + [base]).count == 6)
    }

    @Test func aChangedFieldChangesTheHashWithIt() {
        var changed = Self.key()
        changed.model = "iPhone16,2"
        changed.osMajor = 18
        changed.language = "ja-JP"
        changed.orientation = .landscape
        changed.keyboardType = "numberPad"
        let made = Self.key(model: "iPhone16,2", osMajor: 18, language: "ja-JP", orientation: .landscape, keyboardType: "numberPad")
        #expect(changed == made && changed.hashValue == made.hashValue)
        #expect([made: 1][changed] == 1)
        changed.model = "iPhone17,1"
        #expect(changed != made && [made: 1][changed] == nil)
    }
}
