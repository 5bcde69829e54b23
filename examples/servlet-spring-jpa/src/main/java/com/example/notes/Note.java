package com.example.notes;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.GeneratedValue;
import jakarta.persistence.GenerationType;
import jakarta.persistence.Id;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.Size;
import java.time.Instant;

/** A note: a title (required, at most 100 characters) and a text. */
@Entity
public class Note {
    @Id
    @GeneratedValue(strategy = GenerationType.IDENTITY)
    private Long id;

    @NotBlank(message = "A note needs a title.")
    @Size(max = 100, message = "A title has at most {max} characters.")
    @Column(nullable = false, length = 100)
    private String title;

    @Size(max = 2000, message = "A text has at most {max} characters.")
    @Column(length = 2000)
    private String body;

    @Column(nullable = false)
    private Instant created;

    public Long getId() { return id; }
    public void setId(Long id) { this.id = id; }
    public String getTitle() { return title; }
    public void setTitle(String title) { this.title = title; }
    public String getBody() { return body; }
    public void setBody(String body) { this.body = body; }
    public Instant getCreated() { return created; }
    public void setCreated(Instant created) { this.created = created; }
}
