"""Tokenizer: LoCoMo-parity default, stop words, Porter stemming, Chinese segmentation."""

import pytest

from memlab.base import ConfigError
from memlab.retrieval.tokenize import Tokenizer, snowball_stem
from memlab.text import ENGLISH_STOPWORDS, porter_stem


def test_default_is_lowercased_word_tokens():
    assert Tokenizer()("Hello, World! It's 2023_05 e-mail") == [
        "hello", "world", "it", "s", "2023_05", "e", "mail"]


def test_lowercase_off_keeps_case():
    assert Tokenizer(lowercase=False)("Hello World") == ["Hello", "World"]


def test_english_stopwords_and_custom_list():
    assert Tokenizer(stopwords="english")("The cat is on the mat") == ["cat", "mat"]
    assert Tokenizer(stopwords=["Cat"])("the cat sat") == ["the", "sat"]
    assert "the" in ENGLISH_STOPWORDS and "cat" not in ENGLISH_STOPWORDS


@pytest.mark.parametrize("word, stem", [
    ("caresses", "caress"), ("ponies", "poni"), ("ties", "ti"), ("cats", "cat"),
    ("feed", "feed"), ("agreed", "agre"), ("plastered", "plaster"), ("motoring", "motor"),
    ("sing", "sing"), ("hopping", "hop"), ("falling", "fall"), ("hissing", "hiss"),
    ("filing", "file"), ("happy", "happi"), ("sky", "sky"), ("relational", "relat"),
    ("conditional", "condit"), ("rational", "ration"), ("hopefulness", "hope"),
    ("electrical", "electr"), ("adjustment", "adjust"), ("adoption", "adopt"),
    ("controll", "control"), ("roll", "roll"), ("generalizations", "gener"),
    ("oscillators", "oscil"), ("is", "is"),
])
def test_porter_stems(word, stem):
    assert porter_stem(word) == stem
    assert snowball_stem(word, "porter") == stem


@pytest.mark.parametrize("word, porter, english", [
    ("ties", "ti", "tie"), ("generalizations", "gener", "general"), ("dying", "dy", "die"),
    ("news", "new", "news"), ("fairly", "fairli", "fair"), ("skis", "ski", "ski"),
])
def test_porter2_english_differs_from_porter_where_snowball_says(word, porter, english):
    assert snowball_stem(word, "porter") == porter
    assert snowball_stem(word, "english") == english


def test_stopwords_then_stemming_on_a_dialogue_turn():
    t = Tokenizer(stopwords="english", stemmer="porter")
    assert t('Caroline said, "I went to the LGBTQ support group yesterday and it was so powerful."') == [
        "carolin", "said", "went", "lgbtq", "support", "group", "yesterdai", "power"]
    assert Tokenizer(stopwords="english", stemmer="english")("She is running races") == ["run", "race"]


def test_stemmer_applies_to_ascii_words_only():
    assert Tokenizer(stemmer="porter")("Running cafés 2023s") == ["run", "cafés", "2023s"]


def test_chinese_bigrams_by_default_and_mixed_runs_split():
    assert Tokenizer()("我爱北京 abc中文def 好") == [
        "我爱", "爱北", "北京", "abc", "中文", "def", "好"]


def test_chinese_chars_mode():
    assert Tokenizer(chinese="char")("北京") == ["北", "京"]


def test_chinese_char_plus_bigram_mode():
    assert Tokenizer(chinese="char+bigram")("我爱北京") == ["我", "爱", "北", "京", "我爱", "爱北", "北京"]
    assert Tokenizer(chinese="char+bigram")("爱") == ["爱"]


def test_mixed_english_and_chinese_text_gets_both_treatments():
    t = Tokenizer(stopwords="english", stemmer="porter", chinese="char")
    assert t("The meetings在北京 are running") == ["meet", "在", "北", "京", "run"]


def test_chinese_jieba_mode_is_deterministic():
    t = Tokenizer(chinese="jieba")
    first = t("我爱北京天安门")
    assert first == ["我", "爱", "北京", "天安门"]
    assert Tokenizer(chinese="jieba")("我爱北京天安门") == first


def test_invalid_config_names_parameter():
    with pytest.raises(ConfigError, match=r"Tokenizer parameter 'chinese': expected one of 'bigram', 'char', "
                                          r"'char\+bigram', 'jieba', got 'pinyin'"):
        Tokenizer(chinese="pinyin")
    with pytest.raises(ConfigError, match="Tokenizer parameter 'stemmer': expected one of 'porter', 'english' "
                                          "or None, got 'snowball'"):
        Tokenizer(stemmer="snowball")
    with pytest.raises(ConfigError, match="Tokenizer parameter 'stopwords': expected None, 'english' or a list "
                                          "of words, got 'french'"):
        Tokenizer(stopwords="french")


def test_set_params_rederives_state():
    t = Tokenizer()
    t.set_params(stopwords="english")
    assert t("the cat") == ["cat"]
