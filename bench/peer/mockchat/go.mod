module github.com/reinhq/rein/bench/peer/mockchat

go 1.26.8
