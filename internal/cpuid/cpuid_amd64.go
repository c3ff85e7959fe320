package cpuid

func cpuid(leaf, sub uint32) (a, b, c, d uint32)

func xgetbv() (eax uint32)

func detect() featureSet {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return featureSet{}
	}
	_, _, c1, _ := cpuid(1, 0)
	_, b7, _, _ := cpuid(7, 0)
	f := featureSet{erms: b7&(1<<9) != 0}
	const osxsave, avx = 1 << 27, 1 << 28
	if c1&(osxsave|avx) == osxsave|avx && xgetbv()&6 == 6 {
		f.avx2 = b7&(1<<5) != 0
	}
	return f
}
