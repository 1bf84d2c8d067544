import unittest

from slugify import slugify


class SlugifyTest(unittest.TestCase):
    def test_lower_case_words_joined_by_hyphens(self):
        self.assertEqual(slugify("Hello World"), "hello-world")

    def test_punctuation_is_dropped(self):
        self.assertEqual(slugify("Ready, set: go!"), "ready-set-go")

    def test_runs_of_spaces_make_one_hyphen(self):
        self.assertEqual(slugify("  many   spaces  "), "many-spaces")

    def test_digits_are_kept(self):
        self.assertEqual(slugify("Top 10 tips"), "top-10-tips")


if __name__ == "__main__":
    unittest.main()
