module github.com/bbc28f59/engine/bench/lab

go 1.26.0

replace github.com/bbc28f59/engine => ../..
