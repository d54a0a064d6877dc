"""shiftlearn.boosting"""
