package protocol

// Connect is connect, for the external tests (filtercodes_test.go, which
// imports mocks/pluginmocks, itself an importer of this package).
var Connect = connect
