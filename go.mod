module github.com/gompix/gompix

go 1.26
