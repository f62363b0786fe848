/// One member of `device` as the rules read it: absent, null, a string, or
/// another JSON type (by its name, for "must be a string, not number").
public enum DeviceMember: Sendable, Equatable {
    case absent, null, string(String), other(typeName: String)
}

/// The members of a `device` object the rules read (others are ignored).
public struct DeviceMembers: Sendable, Equatable {
    /// The member names, in the order of `set(_:_:)`.
    public static let names = ["model", "os", "app", "app_version", "screen"]

    public var model = DeviceMember.absent
    public var os = DeviceMember.absent
    public var app = DeviceMember.absent
    public var appVersion = DeviceMember.absent
    public var screen = DeviceMember.absent

    public init() {}

    /// Sets the member at `field`, an index into `names`.
    public mutating func set(_ field: Int, _ value: DeviceMember) {
        switch field {
        case 0: model = value
        case 1: os = value
        case 2: app = value
        case 3: appVersion = value
        default: screen = value
        }
    }
}

/// A batch's `device` as the rules read it.
public enum DeviceValue: Sendable, Equatable {
    /// Absent or null: "is required".
    case missing
    case object(DeviceMembers)
    /// Another JSON type, by its name.
    case other(typeName: String)
}

extension FieldRules {
    /// The `device` object's checks, in order: model, os, app, app_version, screen.
    public static func device(_ value: DeviceValue) throws(FieldError) -> Device {
        let members: DeviceMembers
        switch value {
        case .missing: throw FieldError(field: "device", reason: "is required")
        case .other(let typeName): throw FieldError(field: "device", reason: "must be an object, not \(typeName)")
        case .object(let object): members = object
        }
        guard case .string(let model) = members.model else {
            throw FieldError(field: "device.model", reason: members.model == .absent ? "is required" : "must be a string")
        }
        if let problem = modelProblem(model) { throw FieldError(field: "device.model", reason: problem) }
        guard case .string(let os) = members.os else {
            throw FieldError(field: "device.os", reason: members.os == .absent ? "is required" : "must be a string")
        }
        guard let osMajor = osMajor(os) else {
            throw FieldError(field: "device.os", reason: "must be a dotted version like 26.1 or 18.6.2")
        }
        let app = try optionalString(members.app, field: "device.app", maxLength: 128)
        let appVersion = try optionalString(members.appVersion, field: "device.app_version", maxLength: 128)
        var screen: ScreenSize?
        if let text = try optionalString(members.screen, field: "device.screen", maxLength: 128) {
            guard let parsed = ScreenSize(text) else {
                throw FieldError(field: "device.screen", reason: ScreenSize.problem(text) ?? "is not a screen size")
            }
            screen = parsed
        }
        return Device(model: model, os: os, osMajor: osMajor, app: app, appVersion: appVersion, screen: screen)
    }

    private static func optionalString(_ value: DeviceMember, field: String, maxLength: Int) throws(FieldError) -> String? {
        switch value {
        case .absent, .null: return nil
        case .string(let string):
            // Code points, as JSON Schema's maxLength counts them (not grapheme clusters).
            guard string.unicodeScalars.count <= maxLength else {
                throw FieldError(field: field, reason: "must be at most \(maxLength) characters")
            }
            return string
        case .other(let typeName):
            throw FieldError(field: field, reason: "must be a string, not \(typeName)")
        }
    }
}
