// The reference JSON parser and validator (`JSONParser`, `JSONValue`,
// `BatchValidator`, `IntakeOracle`) left KBTDCore for KBTDReference; the
// tests read answers with them throughout, so the module is imported for
// every file of the target here.
@_exported import KBTDReference
