// Package yamlcfg reads the YAML configuration files of the commands
// (vodcluster manager, node and cdp --config, vodcluster sim --config)
// the same way: strictly (unknown keys and a second document are
// errors), with durations written as the duration flags take them (Go's
// form, or whole days: "7d", "1d12h") and quoted as written at their
// line in errors, whole numbers refused with a fraction or out of range,
// and a value of the wrong kind named by its key rather than by the Go
// type it could not go into.
//
// It owns the reading of a file's text into a configuration's struct
// (Decode) and the words of its errors, each "line N: ..." without the
// file's name; the caller names a key from its path (Options: a
// section's key alone, or with the flag that sets it), puts the file's
// name first, and checks the values' ranges, showing a value as the
// file wrote it, at its line (File.Show; a duration: DurTexts.Show). The durations' forms are durflag's.
package yamlcfg
