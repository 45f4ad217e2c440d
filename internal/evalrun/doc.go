// Package evalrun runs `memindex eval` against in-process nodes: for each
// corpus (a LoCoMo-format folder, or a generated synthetic-en /
// synthetic-zh one) it asks internal/eval's plain BM25 baseline every
// question, starts a fresh node per pass (the settings as given, then one
// per --tune combination), indexes the corpus, waits for every vector,
// asks every question in every mode over NATS (client.Client), scores the
// hits by eval's strict rule and returns eval's report.
//
// It lives apart from internal/eval so that eval stays free of nodes and
// NATS. It starts nodes only through the harness.Hooks the binary hands it;
// it must not parse or register flags, read the environment, or print
// anywhere but the progress writer it is given. --tune's settings reach a
// run as Config.Configure; Tunable (tune.go) builds that from the binary's
// flag set, checking each --tune axis and setting a combination's values
// only while a pass is read, then back.
package evalrun
