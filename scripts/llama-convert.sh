#!/bin/sh
# llama.cpp's Hugging Face -> GGUF converter, for the test that `multimsd export` writes what it reads.
# llama.cpp ships no wheel of its converter; the llama-cpp-python sdist (PyPI) vendors llama.cpp whole, so the
# converter (convert_hf_to_gguf.py and its conversion/ package) and its gguf-py are taken from there, with
# sentencepiece (the converter imports it) installed beside them. Nothing is compiled; torch, transformers and
# numpy come from the virtualenv that runs it:
#   PYTHONPATH=DEST/gguf-py:DEST/deps python DEST/convert_hf_to_gguf.py MODEL_DIR --outfile model.gguf
# Usage: scripts/llama-convert.sh PYTHON VERSION DEST
set -eu
py=$1 version=$2 dest=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" -m pip download -q --no-deps --no-binary :all: -d "$tmp" "llama-cpp-python==$version"
src=llama_cpp_python-$version/vendor/llama.cpp
tar xzf "$tmp/llama_cpp_python-$version.tar.gz" -C "$tmp" "$src/convert_hf_to_gguf.py" "$src/conversion" "$src/gguf-py" "$src/LICENSE"
rm -rf "$dest"
mkdir -p "$dest"
mv "$tmp/$src/convert_hf_to_gguf.py" "$tmp/$src/conversion" "$tmp/$src/gguf-py" "$tmp/$src/LICENSE" "$dest/"
"$py" -m pip install -q --target "$dest/deps" "sentencepiece>=0.1.98,<0.3.0"
echo "llama-cpp-python $version" > "$dest/.installed"
