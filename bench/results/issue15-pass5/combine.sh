#!/bin/sh
# Concatenates the two runs (core+core2, leader+leader2) file by file into all/.
cd "$(dirname "$0")" && mkdir -p all
for f in core-base core-final core-floor; do cat core/$f.txt core2/$f.txt > all/$f.txt; done
for f in leader-base leader-final franzgo-base franzgo-final wire-base wire-final; do
	cat leader/$f.txt leader2/$f.txt > all/$f.txt
done
