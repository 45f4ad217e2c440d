package memindex

import "hash/fnv"

// ValidNamespace reports whether ns is a valid namespace: a NATS-safe token of
// 1 to 64 characters from [A-Za-z0-9_-] (the regular expression
// ^[A-Za-z0-9_-]{1,64}$, which TestValidNamespaceIsItsPattern holds it to;
// a loop, because every event and request checks it, some twice).
func ValidNamespace(ns string) bool {
	if len(ns) < 1 || len(ns) > 64 {
		return false
	}
	for i := 0; i < len(ns); i++ {
		switch c := ns[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// CheckNamespace returns nil for a valid namespace, otherwise the error
// every event, search and read validation gives for one: a *FieldError of
// field "namespace" wrapping ErrInvalid.
func CheckNamespace(ns string) error {
	if ValidNamespace(ns) {
		return nil
	}
	return fieldErr("namespace", "%q is not 1-64 characters of [A-Za-z0-9_-]", truncate(ns, 80))
}

// Partition returns the partition of namespace ns among p partitions. It is
// the value nats-server's subject transform partition(p,1) computes for the
// namespace token: FNV-1a 32 of the token, modulo p.
func Partition(ns string, p int) int {
	if p <= 0 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(ns))
	return int(h.Sum32() % uint32(p))
}
