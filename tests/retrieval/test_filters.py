

def test_booleans_are_not_numbers_as_in_chromadb():
    from memlab.filters import matches

    assert not matches({"x": True}, {"x": 1})
    assert not matches({"x": 1}, {"x": True})
    assert matches({"x": 1}, {"x": 1.0})
    assert matches({"x": True}, {"x": {"$in": [True]}}) and not matches({"x": True}, {"x": {"$in": [1]}})
    assert matches({"x": True}, {"x": {"$ne": 1}})
    assert not matches({"x": True}, {"x": {"$gt": 0}})
    assert not matches({"x": "b"}, {"x": {"$gt": 1}})
