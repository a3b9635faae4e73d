"""Character classes shared by every tokenizer in memlab (BM25, hashing, offline LLM, answer F1).

Chinese and Japanese are written without spaces, so each tokenizer splits these scripts
itself (characters, bigrams or jieba words) instead of relying on whitespace.
"""

#: Han ideographs: CJK unified (and extension A) and compatibility ideographs.
HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
#: Han ideographs outside the basic plane (extensions B to F).
HAN_SUPPLEMENTARY = "\U00020000-\U0002ebef"
#: Hiragana and katakana.
KANA = "\u3040-\u30ff"
