// The reference JSON parser and validator (`JSONParser`, `JSONValue`, `BatchValidator`,
// `IntakeOracle`) live in KBTDReference; the helpers and the tests read answers with them,
// so every module that imports KBTDTestSupport sees them too. The client's fakes (`ManualClock`,
// `RecordingTransport`, `ScriptedTransport`, ...) are the client package's KeyboardTelemetryClientTesting.
@_exported import KBTDReference
@_exported import KeyboardTelemetryClientTesting
