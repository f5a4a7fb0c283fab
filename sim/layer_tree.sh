#!/bin/sh
# Makes DEST/sim/<folder> symlinks to SIM/<folder> for each folder named: the include tree a
# layer is compiled with, so it can include its own and lower layers' headers and no others.
# Usage: layer_tree.sh DEST SIM FOLDER...
set -eu
dest=$1 sim=$2
shift 2
rm -rf "$dest"
mkdir -p "$dest/sim"
for folder in "$@"; do
  ln -s "$sim/$folder" "$dest/sim/$folder"
done
