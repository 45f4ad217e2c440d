// Package secret reads secrets from the environment: a variable holding the
// value, or NAME_FILE naming a file that holds it (a mounted secret); cmd
// reads NATS passwords and tokens and provider API keys with it, and Redact
// takes their values out of a text (doctor's report). It must
// never log a secret or return one inside an error.
package secret
