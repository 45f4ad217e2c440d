// Package internal holds test helpers shared by the packages of memindex
// (see natstest). Nothing here is used by production code.
package internal
