//go:build !amd64

package cpuid

func detect() featureSet { return featureSet{} }
